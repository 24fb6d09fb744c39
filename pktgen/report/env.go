package report

// GlobalSysctls bound what a forwarding path can do on this machine; a
// report keeps their values (Env.Sysctls).
var GlobalSysctls = []string{"net.core.dev_weight", "net.core.netdev_max_backlog", "net.core.netdev_budget", "net.core.netdev_budget_usecs"}

// Env is what makes a run reproducible: the machine, the kernel, the
// settings that bound forwarding, where the run's parts were placed, the
// engine and the lab file.
type Env struct {
	Kernel   string `json:"kernel"`
	CPUModel string `json:"cpu_model"`
	// CPUs is the machine's online CPU count; OnlineCPUs lists them.
	CPUs       int    `json:"cpus"`
	OnlineCPUs string `json:"online_cpus"`
	// AllowedCPUs is what this process may use (its affinity): another
	// fact than the machine's CPUs.
	AllowedCPUs string `json:"allowed_cpus"`
	// Placement says where the lab put each part, or why it put nothing.
	Placement []string `json:"placement"`
	// Impairments are the root qdiscs of the path's interfaces as the
	// kernel had them when the bench started ("netem delay 20ms"), by
	// node:interface.
	Impairments map[string]string `json:"impairments,omitempty"`
	Sampler     string            `json:"sampler"`
	Sysctls     map[string]string `json:"sysctls"`
	// LabSets are the machine-wide sysctls the lab file sets while it is
	// deployed (machine: sysctls), "key=value".
	LabSets []string `json:"lab_sets,omitempty"`
	Engine  string   `json:"engine"`
	EngineV string   `json:"engine_version,omitempty"`
	LabHash string   `json:"lab_sha256,omitempty"`
	// LabFile is the lab's file as given, or with AsDeployed the file the
	// lab was deployed from, which the run measured instead (the hash is
	// always that of the lab measured).
	LabFile    string `json:"lab_file,omitempty"`
	AsDeployed bool   `json:"as_deployed,omitempty"`
	NSLab      string `json:"nslab_version,omitempty"`
}
