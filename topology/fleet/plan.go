package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"

	"github.com/nslab/nslab/topology/spec"
)

// Plan is what the coordinator decides once for a lab that spans hosts:
// every host's share, with the VNI, UDP port and MTU of each link between
// hosts. Every agent computes the plan again from the same file and
// refuses a plan whose hash is not its own: a host that would build
// something else (another nslab, another file) builds nothing.
type Plan struct {
	Lab     string  `json:"lab"`
	FileSHA string  `json:"file_sha256"`
	Shares  []Share `json:"shares"`
	Hash    string  `json:"hash"`
}

// Share is one host's part of the plan.
type Share struct {
	Host     string       `json:"host"`
	Underlay netip.Addr   `json:"underlay"`
	Nodes    []string     `json:"nodes"`
	Tunnels  []TunnelPlan `json:"tunnels"`
}

// TunnelPlan is one end of a link between hosts: the VXLAN interface its
// host makes.
type TunnelPlan struct {
	Local      string     `json:"local"`
	Remote     string     `json:"remote"`
	RemoteHost string     `json:"remote_host"`
	VNI        int        `json:"vni"`
	Port       int        `json:"port"`
	MTU        int        `json:"mtu"`
	LocalIP    netip.Addr `json:"local_ip"`
	RemoteIP   netip.Addr `json:"remote_ip"`
}

// NewPlan is the plan of lab l (a whole lab that spans hosts) read from
// file.
func NewPlan(file []byte, l *spec.Lab) (*Plan, error) {
	if !l.Spans() {
		return nil, fmt.Errorf("lab %s does not span hosts (its file has no hosts: section)", l.Name)
	}
	p := &Plan{Lab: l.Name, FileSHA: spec.FileSHA(file)}
	for _, h := range l.Hosts {
		part, err := l.PartOf(h.Name)
		if err != nil {
			return nil, err
		}
		s := Share{Host: h.Name, Underlay: h.Underlay, Nodes: []string{}, Tunnels: []TunnelPlan{}}
		for _, n := range part.Nodes {
			s.Nodes = append(s.Nodes, n.Name)
		}
		for _, t := range part.Tunnels() {
			mtu := part.Node(t.Local.Node).Interface(t.Local.Interface).MTU
			s.Tunnels = append(s.Tunnels, TunnelPlan{Local: t.Local.String(), Remote: t.Remote.String(), RemoteHost: t.RemoteHost,
				VNI: t.VNI, Port: t.Port, MTU: mtu, LocalIP: t.LocalIP, RemoteIP: t.RemoteIP})
		}
		p.Shares = append(p.Shares, s)
	}
	p.Hash = p.hash()
	return p, nil
}

// hash is the SHA-256 of everything the plan decides.
func (p *Plan) hash() string {
	data, _ := json.Marshal(struct {
		Lab, FileSHA string
		Shares       []Share
	}{p.Lab, p.FileSHA, p.Shares})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Share is host's share, nil if the plan has no such host.
func (p *Plan) Share(host string) *Share {
	i := slices.IndexFunc(p.Shares, func(s Share) bool { return s.Host == host })
	if i < 0 {
		return nil
	}
	return &p.Shares[i]
}

// Hosts lists the plan's hosts in the file's order.
func (p *Plan) Hosts() []string {
	out := make([]string, len(p.Shares))
	for i, s := range p.Shares {
		out[i] = s.Host
	}
	return out
}

// Agrees checks that mine, the plan this host computed from the same
// file, is p, the coordinator's; the error names what differs.
func (p *Plan) Agrees(mine *Plan) error {
	if p.hash() != p.Hash {
		return fmt.Errorf("the coordinator's plan does not match its own hash %s: it was changed on the way", short(p.Hash))
	}
	if mine.Hash == p.Hash {
		return nil
	}
	what := "its shares"
	switch {
	case mine.Lab != p.Lab:
		what = fmt.Sprintf("the lab's name (%s here, %s there)", mine.Lab, p.Lab)
	case mine.FileSHA != p.FileSHA:
		what = "the file"
	default:
		for _, s := range p.Shares {
			if m := mine.Share(s.Host); m == nil || !slices.Equal(m.Tunnels, s.Tunnels) || !slices.Equal(m.Nodes, s.Nodes) {
				what = fmt.Sprintf("host %s's share (its nodes, or its VXLAN links' VNIs, ports and MTUs)", s.Host)
				break
			}
		}
	}
	return fmt.Errorf("this host computes plan %s from the file, the coordinator plan %s: %s differs; run the same nslab on every host", short(mine.Hash), short(p.Hash), what)
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
