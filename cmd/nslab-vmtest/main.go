// Command nslab-vmtest runs nslab's kernel tests (go test -tags vmtest) inside
// a VM booted on a Debian distribution kernel, for what our own machines'
// kernel cannot do (it has no pktgen and no loadable modules).
//
// It fetches the kernel package with apt (cached), takes its vmlinuz and the
// modules the tests need (veth, pktgen; neither has dependencies), packs an
// initramfs of busybox-static, the modules and the statically built test
// binary, boots it with qemu-system-x86_64 under TCG (KVM only with -kvm),
// and reports pass or fail from the serial console. The VM has no network
// card: its only traffic is between the namespaces the tests create.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/nslab/nslab/internal/caps"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// resultMarker is the line /init prints after the tests, with their exit code.
const resultMarker = "NSLAB-VMTEST-RESULT rc="

// modules are loaded in this order (dependencies first): veth and pktgen
// for the pktgen tests, the bridge and what it needs for the lab tests,
// the link kinds this machine's kernel lacks (802.1Q VLANs, bonds, VRFs;
// macvlan), and nf_tables with connection tracking and NAT for the NAT and
// firewall tests, and overlayfs for the nodes' views of /etc (a
// distribution's kernel loads these on demand through modprobe, which the
// VM has not).
var modules = []string{"drivers/net/veth.ko", "net/core/pktgen.ko", "net/llc/llc.ko", "net/802/stp.ko", "net/bridge/bridge.ko",
	"net/802/mrp.ko", "net/802/garp.ko", "net/8021q/8021q.ko", "net/tls/tls.ko", "drivers/net/bonding/bonding.ko", "drivers/net/macvlan.ko", "drivers/net/vrf.ko",
	"net/netfilter/nfnetlink.ko", "lib/libcrc32c.ko", "net/netfilter/nf_tables.ko", "net/ipv4/netfilter/nf_defrag_ipv4.ko",
	"net/ipv6/netfilter/nf_defrag_ipv6.ko", "net/netfilter/nf_conntrack.ko", "net/netfilter/nf_nat.ko", "net/netfilter/nft_chain_nat.ko",
	"net/netfilter/nft_nat.ko", "net/netfilter/nft_masq.ko", "net/netfilter/nft_ct.ko", "net/netfilter/nf_flow_table.ko",
	"net/netfilter/nf_flow_table_inet.ko", "net/netfilter/nft_flow_offload.ko", "fs/overlayfs/overlay.ko"}

// onDemand modules are not loaded by /init: they sit where the kernel's
// modules live (/lib/modules/RELEASE/kernel/...), and nslab loads them
// itself when a lab needs them, as it would on a distribution kernel (the
// impairment qdiscs).
var onDemand = []string{"net/sched/sch_netem.ko", "net/sched/sch_tbf.ko", "net/sched/sch_fq_codel.ko", "net/sched/sch_fq.ko", "net/sched/sch_cake.ko", "net/sched/sch_htb.ko"}

func main() {
	cache := flag.String("cache", ".cache/vm", "cache directory (kernel, initramfs)")
	pkgs := flag.String("pkg", "./pktgen/kernel/,./pktgen/auto/,./pktgen/bench/,./topology/lab/,./topology/check/,./topology/qdisc/", "packages whose tests (with the vmtest tag) run in the VM, comma-separated")
	run := flag.String("run", "", "only tests matching this regexp (go test -run)")
	skip := flag.String("skip", "", "leave out the tests matching this regexp (go test -skip): make test leaves out those the host's run has just run and that ask nothing of the VM's kernel")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up on the VM after this long (its tests take about 5 minutes of emulated CPUs here; a noisy host has stretched one run past 6); a VM that hangs is booted once more")
	kvm := flag.Bool("kvm", false, "use KVM instead of TCG (only if it works here)")
	cpus := flag.Int("smp", 2, "virtual CPUs (pktgen runs one thread per CPU)")
	verbose := flag.Bool("v", false, "show the whole console")
	script := flag.String("script", "", "run this shell script in the VM instead of the tests, and show its output")
	prepare := flag.Bool("prepare", false, "only make the VM's kernel and initramfs (the test binaries built), to boot later: make test makes them while its untimed checks run")
	flag.Parse()
	if *script != "" {
		*pkgs, *verbose = "", false
	}
	vm := vmRun{cache: *cache, pkgs: pkgList(*pkgs), filter: testFilter{*run, *skip}, script: *script}
	if *prepare {
		if _, _, err := vm.make(); err != nil {
			fmt.Fprintln(os.Stderr, "vmtest:", err)
			os.Exit(1)
		}
		return
	}
	if err := runVM(vm, *timeout, *kvm, *cpus, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "vmtest:", err)
		os.Exit(1)
	}
}

func pkgList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// vmRun is what the VM runs: the test packages (with the filter), or a
// script; cache holds its kernel and initramfs.
type vmRun struct {
	cache  string
	pkgs   []string
	filter testFilter
	script string
}

// made is the file beside the initramfs that says what it was made for.
func (v vmRun) made() string { return filepath.Join(v.cache, "initramfs.for") }

// what says what the initramfs runs, and from which sources (the working
// tree's state, as git sees it), to tell a prepared one from a stale one.
func (v vmRun) what() string {
	tree, _ := exec.Command("git", "describe", "--always", "--dirty").Output()
	status, _ := exec.Command("git", "status", "--porcelain").Output()
	return fmt.Sprintf("%q %q %q %q\n%s%s", v.pkgs, v.filter.run, v.filter.skip, v.script, tree, status)
}

// make fetches the kernel and makes the initramfs (building the test
// binaries), and notes what for.
func (v vmRun) make() (kernel, initrd string, err error) {
	if v.cache, err = filepath.Abs(v.cache); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(v.cache, 0o755); err != nil {
		return "", "", err
	}
	kernel, mods, err := fetchKernel(v.cache)
	if err != nil {
		return "", "", fmt.Errorf("kernel: %w", err)
	}
	root := filepath.Join(v.cache, "initramfs")
	if err := os.RemoveAll(root); err != nil {
		return "", "", err
	}
	if err := buildRoot(root, mods, v.pkgs, v.filter, v.script); err != nil {
		return "", "", fmt.Errorf("initramfs: %w", err)
	}
	initrd = filepath.Join(v.cache, "initramfs.cpio")
	if err := packCpio(root, initrd); err != nil {
		return "", "", fmt.Errorf("initramfs: %w", err)
	}
	return kernel, initrd, os.WriteFile(v.made(), []byte(v.what()), 0o644)
}

// prepared is the kernel and initramfs -prepare made for this run, when
// they are there and the sources have not changed since.
func (v vmRun) prepared() (kernel, initrd string, ok bool) {
	cache, err := filepath.Abs(v.cache)
	if err != nil {
		return "", "", false
	}
	v.cache = cache
	note, err := os.ReadFile(v.made())
	kernel, initrd = filepath.Join(cache, "kernel", "vmlinuz"), filepath.Join(cache, "initramfs.cpio")
	if err != nil || string(note) != v.what() {
		return "", "", false
	}
	for _, f := range []string{kernel, initrd} {
		if _, err := os.Stat(f); err != nil {
			return "", "", false
		}
	}
	return kernel, initrd, true
}

func runVM(vm vmRun, timeout time.Duration, kvm bool, cpus int, verbose bool) error {
	script := vm.script
	kernel, initrd, ok := vm.prepared()
	if ok {
		fmt.Println("vmtest: booting the kernel and initramfs made before (-prepare)")
	} else {
		var err error
		if kernel, initrd, err = vm.make(); err != nil {
			return err
		}
	}
	ran := map[string]int{}
	err := boot(kernel, initrd, timeout, kvm, cpus, verbose || script != "", nil, ran)
	if errors.Is(err, errHung) {
		// An emulated VM has hung (a soft lockup of an emulated CPU, seen
		// about once in ten runs): its console is above. A package that
		// failed before is a failure; otherwise one more boot runs the
		// packages that had not passed, and tells a hang of the emulation
		// from one the tests cause, which hangs again.
		var passed, failed []string
		for name, rc := range ran {
			if rc == 0 {
				passed = append(passed, name)
			} else {
				failed = append(failed, name)
			}
		}
		if len(failed) > 0 {
			slices.Sort(failed)
			return fmt.Errorf("tests failed in the VM before it hung: %s", strings.Join(failed, ", "))
		}
		slices.Sort(passed)
		fmt.Printf("vmtest: booting the VM once more, for the packages that had not passed (%d had)\n", len(passed))
		err = boot(kernel, initrd, timeout, kvm, cpus, verbose || script != "", passed, map[string]int{})
	}
	return err
}

// fetchKernel returns the cached vmlinuz and module directory, downloading
// the current Debian cloud kernel package first if the cache is empty.
func fetchKernel(cache string) (string, string, error) {
	kdir := filepath.Join(cache, "kernel")
	vmlinuz := filepath.Join(kdir, "vmlinuz")
	mods := filepath.Join(kdir, "modules")
	if cached(mods) {
		return vmlinuz, mods, nil
	}
	pkg, err := kernelPackage()
	if err != nil {
		return "", "", err
	}
	dl := filepath.Join(cache, "download")
	if err := os.RemoveAll(dl); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(dl, 0o755); err != nil {
		return "", "", err
	}
	defer func() { _ = os.RemoveAll(dl) }() // a download directory: best effort
	fmt.Printf("vmtest: downloading %s\n", pkg)
	if err := command(dl, "apt-get", "download", pkg); err != nil {
		return "", "", err
	}
	debs, _ := filepath.Glob(filepath.Join(dl, "*.deb"))
	if len(debs) != 1 {
		return "", "", fmt.Errorf("apt-get download %s left %d packages", pkg, len(debs))
	}
	x := filepath.Join(dl, "x")
	if err := command(dl, "dpkg-deb", "-x", debs[0], x); err != nil {
		return "", "", err
	}
	if err := os.RemoveAll(kdir); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(mods, 0o755); err != nil {
		return "", "", err
	}
	images, _ := filepath.Glob(filepath.Join(x, "boot", "vmlinuz-*"))
	if len(images) != 1 {
		return "", "", fmt.Errorf("%s has %d kernel images", pkg, len(images))
	}
	if err := copyFile(images[0], vmlinuz, 0o644); err != nil {
		return "", "", err
	}
	if err := copyModules(pkg, x, kdir, mods); err != nil {
		return "", "", err
	}
	releases, _ := filepath.Glob(filepath.Join(x, "lib", "modules", "*"))
	if len(releases) != 1 {
		return "", "", fmt.Errorf("%s has %d module directories", pkg, len(releases))
	}
	if err := os.WriteFile(filepath.Join(kdir, "release"), []byte(filepath.Base(releases[0])), 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(kdir, "package"), []byte(pkg+"\n"), 0o644); err != nil {
		return "", "", err
	}
	return vmlinuz, mods, nil
}

// copyModules copies the modules the VM loads, and those of onDemand the
// package has (a qdisc built into its kernel has no module), from the
// unpacked package x into mods, and lists the on-demand ones present in
// kdir/ondemand.
func copyModules(pkg, x, kdir, mods string) error {
	var present []string
	for _, m := range append(append([]string(nil), modules...), onDemand...) {
		found, _ := filepath.Glob(filepath.Join(x, "lib", "modules", "*", "kernel", m))
		if len(found) != 1 && slices.Contains(onDemand, m) {
			continue
		}
		if len(found) != 1 {
			return fmt.Errorf("%s has no %s (compressed modules are not handled)", pkg, m)
		}
		if err := copyFile(found[0], filepath.Join(mods, filepath.Base(m)), 0o644); err != nil {
			return err
		}
		if slices.Contains(onDemand, m) {
			present = append(present, m)
		}
	}
	return os.WriteFile(filepath.Join(kdir, "ondemand"), []byte(strings.Join(present, "\n")), 0o644)
}

// cached reports whether every module, and the kernel's release, is in
// the cache.
func cached(mods string) bool {
	for _, m := range modules {
		if _, err := os.Stat(filepath.Join(mods, filepath.Base(m))); err != nil {
			return false
		}
	}
	got, err := os.ReadFile(filepath.Join(filepath.Dir(mods), "ondemand"))
	if err != nil || len(strings.Fields(string(got))) == 0 {
		return false // a cache from before on-demand modules were listed
	}
	_, err = os.Stat(filepath.Join(filepath.Dir(mods), "release"))
	return err == nil
}

// kernelPackage names the package linux-image-cloud-amd64 depends on now.
func kernelPackage() (string, error) {
	re := regexp.MustCompile(`Depends: (linux-image-\S+-cloud-amd64)`)
	for attempt := 0; attempt < 2; attempt++ {
		out, _ := exec.Command("apt-cache", "depends", "linux-image-cloud-amd64").Output()
		if m := re.FindSubmatch(out); m != nil {
			return string(m[1]), nil
		}
		if attempt == 0 {
			if err := command("", "apt-get", "update", "-qq"); err != nil {
				return "", err
			}
		}
	}
	return "", errors.New("apt knows no linux-image-cloud-amd64: is this a Debian machine with its package lists?")
}

// buildRoot lays out the VM's root file system: busybox, the modules, the
// test binaries (run from /src/<pkg> so relative test data paths work, with
// examples/ beside them) and /init.
func buildRoot(root, mods string, pkgs []string, filter testFilter, script string) error {
	if err := baseRoot(root, mods); err != nil {
		return err
	}
	// nslab itself, static, for a smoke run of the CLI on this kernel.
	if err := goBuild("build nslab", "build", "-tags", "urfave_cli_no_docs", "-o", filepath.Join(root, "bin/nslab"), "./cmd/nslab"); err != nil {
		return err
	}
	if err := goBuild("build nslab-capture", "build", "-o", filepath.Join(root, "bin/nslab-capture"), "./cmd/nslab-capture"); err != nil {
		return err
	}
	if script != "" {
		// The plot helper, for a script's --plot.
		if err := goBuild("build nslab-plot", "build", "-o", filepath.Join(root, "bin/nslab-plot"), "./cmd/nslab-plot"); err != nil {
			return err
		}
		// At the same place under /src as in the tree, so that its paths hold.
		rel, err := filepath.Rel(".", script)
		if err != nil || strings.HasPrefix(rel, "..") {
			return fmt.Errorf("-script %s: give a script inside the repository", script)
		}
		if err := os.MkdirAll(filepath.Join(root, "src", filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		if err := copyFile(script, filepath.Join(root, "src", rel), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(root, "init"), []byte(initScript([]string{"sh /src/" + rel + " || rc=1"}, false)), 0o755)
	}
	var runs []string
	for _, pkg := range pkgs {
		run, err := addTests(root, strings.TrimSpace(pkg), filter)
		if err != nil {
			return err
		}
		runs = append(runs, run)
	}
	return os.WriteFile(filepath.Join(root, "init"), []byte(initScript(runs, true)), 0o755)
}

// baseRoot makes the directories and puts busybox, the host tools, the
// modules and the examples in.
func baseRoot(root, mods string) error {
	for _, d := range []string{"bin", "proc", "sys", "dev", "run", "tmp", "mnt", "lib/modules", "tests", "src", "etc", "var/log"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		return errors.New("busybox not found: install busybox-static")
	}
	if err := copyFile(busybox, filepath.Join(root, "bin/busybox"), 0o755); err != nil {
		return err
	}
	// Users the host tools look up (tcpdump drops to its own).
	if err := os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0:root:/root:/bin/sh\ntcpdump:x:101:101::/nonexistent:/bin/false\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "etc/group"), []byte("root:x:0:\ntcpdump:x:101:\n"), 0o644); err != nil {
		return err
	}
	// /init makes the other applets' links (busybox --install) once /proc is up.
	for _, applet := range []string{"sh", "mount"} {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", applet)); err != nil {
			return err
		}
	}
	if err := copyHostTools(root); err != nil {
		return err
	}
	for _, m := range modules {
		name := filepath.Base(m)
		if err := copyFile(filepath.Join(mods, name), filepath.Join(root, "lib/modules", name), 0o644); err != nil {
			return err
		}
	}
	release, err := os.ReadFile(filepath.Join(filepath.Dir(mods), "release"))
	if err != nil {
		return err
	}
	present, err := os.ReadFile(filepath.Join(filepath.Dir(mods), "ondemand"))
	if err != nil {
		return err
	}
	for _, m := range strings.Fields(string(present)) {
		dir := filepath.Join(root, "lib/modules", string(release), "kernel", filepath.Dir(m))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := copyFile(filepath.Join(mods, filepath.Base(m)), filepath.Join(dir, filepath.Base(m)), 0o644); err != nil {
			return err
		}
	}
	return copyTree("examples", filepath.Join(root, "src/examples"))
}

// goBuild runs the go command with cgo off (the VM has no libc).
func goBuild(what string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// addTests builds a package's test binary into the root, with its test
// data, and returns the /init line that runs it.
// testFilter is go test's -run and -skip for the tests in the VM.
type testFilter struct{ run, skip string }

func addTests(root, pkg string, filter testFilter) (string, error) {
	name := strings.ReplaceAll(strings.Trim(filepath.Clean(pkg), "./"), "/", "_")
	bin := filepath.Join(root, "tests", name+".test")
	if err := goBuild("build tests of "+pkg, "test", "-c", "-tags", "vmtest", "-o", bin, pkg); err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s has no tests to run in the VM", pkg)
	}
	src := filepath.Join(root, "src", filepath.Clean(pkg))
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(pkg, "testdata")); err == nil {
		if err := copyTree(filepath.Join(pkg, "testdata"), filepath.Join(src, "testdata")); err != nil {
			return "", err
		}
	}
	args := "-test.v -test.count=1"
	if filter.run != "" {
		args += " -test.run '" + filter.run + "'"
	}
	if filter.skip != "" {
		args += " -test.skip '" + filter.skip + "'"
	}
	return fmt.Sprintf("if passed_before %[2]s; then echo \"vmtest: package %[2]s passed before the VM was booted again\"; else cd /src/%[1]s && /tests/%[2]s.test %[3]s; r=$?; [ $r = 0 ] || rc=1; echo \"%[4]s%[2]s exit $r\"; fi",
		filepath.Clean(pkg), name, args, packageMarker), nil
}

// packageMarker starts the line the VM prints when a package's tests have
// ended: the package's name and the test binary's exit code follow.
const packageMarker = "vmtest: package "

// passedBefore is the /init function that says whether a package passed
// in an earlier boot: the harness names those on the kernel's command
// line (vmtest.passed=NAME, which the kernel leaves to us).
const passedBefore = `passed_before() { case " $(cat /proc/cmdline) " in *" vmtest.passed=$1 "*) return 0;; esac; return 1; }`

// initScript is the VM's /init: mounts, modules, the nslab smoke run (with
// smoke), the tests (or a script), the result line, power off.
func initScript(runs []string, smoke bool) string {
	smokeRun := ""
	if smoke {
		smokeRun = smokeLines
	}
	return `#!/bin/sh
export PATH=/` + toolsDir + `:/bin
mount -t proc proc /proc
/bin/busybox --install -s /bin 2>/dev/null
mount -t sysfs sysfs /sys
# cgroup v2 with the controllers node limits use, as a distribution's init mounts it
mount -t cgroup2 cgroup2 /sys/fs/cgroup && echo '+cpu +memory +pids' > /sys/fs/cgroup/cgroup.subtree_control || echo "vmtest: no cgroup2"
mount -t devtmpfs devtmpfs /dev
ln -s /proc/self/fd /dev/fd; ln -s fd/0 /dev/stdin; ln -s fd/1 /dev/stdout; ln -s fd/2 /dev/stderr
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
ip link set lo up
for m in ` + moduleNames() + `; do insmod /lib/modules/$m || echo "insmod $m failed"; done
echo "vmtest: kernel $(uname -r), $(nproc) cpus, modules loaded"
rc=0
` + passedBefore + `
cd /src
` + smokeRun + strings.Join(runs, "\n") + `
echo "` + resultMarker + `$rc"
poweroff -f
`
}

// smokeLines run the static nslab binary on the VM's kernel.
const smokeLines = `echo "vmtest: nslab CLI smoke run"
nslab deploy examples/client-router-server.yaml && nslab inspect --name crs && nslab exec ns1 -- ping -c 2 -W 2 10.0.2.1 && nslab destroy --name crs && echo "vmtest: nslab CLI smoke run passed" || { echo "vmtest: nslab CLI smoke run FAILED"; rc=1; nslab destroy --all; }
`

// moduleNames lists the module files in load order.
func moduleNames() string {
	names := make([]string, len(modules))
	for i, m := range modules {
		names[i] = filepath.Base(m)
	}
	return strings.Join(names, " ")
}

// packCpio writes root as a newc cpio archive, the initramfs format.
func packCpio(root, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	var list strings.Builder
	err = filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel != "." {
			list.WriteString(rel + "\n")
		}
		return nil
	})
	if err != nil {
		return err
	}
	cmd := exec.Command("cpio", "--quiet", "-o", "-H", "newc")
	cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr = root, strings.NewReader(list.String()), f, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("cpio (install the cpio package): %w", err)
	}
	return nil
}

// boot runs the VM and reads its console until the result marker. The
// packages passed ran in an earlier boot and are not run again; ran gets
// each package's exit code as its tests end.
func boot(kernel, initrd string, timeout time.Duration, kvm bool, cpus int, verbose bool, passed []string, ran map[string]int) error {
	// Under TCG the kernel is told its CPUs are emulated (caps.Detect
	// reads it): the tests then watch no stalls, which would be the
	// emulator's.
	accel, cmdline := "tcg,thread=multi", "console=ttyS0 panic=-1 quiet loglevel=3 "+caps.EmulatedCPUsWord
	if kvm {
		accel, cmdline = "kvm", "console=ttyS0 panic=-1 quiet loglevel=3"
	}
	for _, name := range passed {
		cmdline += " vmtest.passed=" + name
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := []string{"-accel", accel, "-cpu", "max", "-smp", fmt.Sprint(cpus), "-m", "1024",
		"-kernel", kernel, "-initrd", initrd, "-append", cmdline,
		"-nographic", "-no-reboot", "-nic", "none", "-monitor", "none", "-serial", "stdio"}
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start qemu-system-x86_64 (install qemu-system-x86): %w", err)
	}
	tail := &lastLines{n: 40}
	rc, err := readConsole(out, verbose, tail, ran)
	if errors.Is(err, errLocked) {
		cancel() // an emulated CPU will not come back: stop waiting for the timeout
	}
	waitErr := cmd.Wait()
	fmt.Printf("vmtest: VM ran %.1fs\n", time.Since(start).Seconds())
	switch {
	case errors.Is(err, errLocked):
		fmt.Printf("vmtest: %v; its console's last lines:\n%s", err, tail)
		return errHung
	case ctx.Err() != nil:
		fmt.Printf("vmtest: the VM did not finish within %s; its console's last lines:\n%s", timeout, tail)
		return errHung
	case err != nil:
		return err
	case rc != 0:
		return fmt.Errorf("tests failed in the VM (exit code %d)", rc)
	case waitErr != nil:
		return fmt.Errorf("qemu: %w", waitErr)
	}
	fmt.Println("vmtest: PASS")
	return nil
}

// readConsole echoes test output (everything with -v), notes in ran each
// package's exit code as its tests end, and returns the exit code printed
// after the result marker.
func readConsole(r io.Reader, verbose bool, tail *lastLines, ran map[string]int) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	testLine := regexp.MustCompile(`^(=== |--- |\s+\S+_test\.go:|PASS|FAIL|ok |vmtest:|panic:)`)
	lockup := regexp.MustCompile(`soft lockup - CPU#\d+ stuck for (\d+)s`)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		tail.add(line)
		if m := lockup.FindStringSubmatch(line); m != nil {
			if s, _ := strconv.Atoi(m[1]); s >= lockedFor {
				return -1, fmt.Errorf("%w: %s", errLocked, strings.TrimSpace(line))
			}
		}
		if rest, ok := strings.CutPrefix(line, packageMarker); ok {
			if name, code, ok := strings.Cut(rest, " exit "); ok {
				if n, err := strconv.Atoi(strings.TrimSpace(code)); err == nil {
					ran[name] = n
				}
			}
		}
		if rest, ok := strings.CutPrefix(line, resultMarker); ok {
			rc, err := strconv.Atoi(strings.TrimSpace(rest))
			if err != nil {
				return 1, fmt.Errorf("unreadable result line %q", line)
			}
			return rc, nil
		}
		if verbose || testLine.MatchString(line) {
			fmt.Println(line)
		}
	}
	return -1, errors.New("the VM stopped without reporting a result (kernel panic or boot failure: run with -v)")
}

// errHung is a VM that printed no result before its timeout.
var errHung = errors.New("the VM hung (no result before the timeout)")

// errLocked is an emulated CPU stuck for lockedFor seconds or more (the
// guest kernel's soft lockup watchdog says so every 20-30 s): seen about
// once in ten runs under TCG, it never came back before the timeout (in
// CI on 2026-12-07 it went on from 26 s to 104 s, the two CPUs stuck in
// ksoftirqd and a test's TCP send), so the VM is stopped at the
// watchdog's second word instead of its fourth or minutes later.
var errLocked = errors.New("an emulated CPU locked up")

const lockedFor = 45

// lastLines keeps the last n lines of the console.
type lastLines struct {
	n     int
	lines []string
}

func (l *lastLines) add(s string) {
	l.lines = append(l.lines, s)
	if len(l.lines) > l.n {
		l.lines = l.lines[1:]
	}
}

func (l *lastLines) String() string { return strings.Join(l.lines, "\n") + "\n" }

func command(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, mode)
}

func copyTree(src, dst string) error {
	return filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		return copyFile(p, target, 0o644)
	})
}
