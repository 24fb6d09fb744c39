package softirq

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf/btf"
)

// devLayout is where the kernel keeps what the per-device program reads:
// skb->dev, dev->ifindex, dev->nd_net.net and net->ns.inum (the network
// namespace's inode number, as stat(2) of /proc/PID/ns/net gives it).
// The offsets come from the running kernel's BTF, so they follow it.
type devLayout struct {
	skbDev, ifindex, ndNet, inum int32
}

// layoutOnce reads the layout once per process: the kernel's BTF is
// megabytes.
var layoutOnce = sync.OnceValues(readLayout)

func readLayout() (devLayout, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return devLayout{}, fmt.Errorf("kernel BTF: %w", err)
	}
	var l devLayout
	var errs []error
	off := func(typ string, path ...string) int32 {
		o, err := offsetOf(spec, typ, path...)
		errs = append(errs, err)
		return o
	}
	l.skbDev = off("sk_buff", "dev")
	l.ifindex = off("net_device", "ifindex")
	l.ndNet = off("net_device", "nd_net", "net")
	l.inum = off("net", "ns", "inum")
	return l, errors.Join(errs...)
}

// offsetOf is the byte offset of the member path in struct typ, looking
// through anonymous structs and unions as C does.
func offsetOf(spec *btf.Spec, typ string, path ...string) (int32, error) {
	var s *btf.Struct
	if err := spec.TypeByName(typ, &s); err != nil {
		return 0, fmt.Errorf("struct %s in the kernel's BTF: %w", typ, err)
	}
	var t btf.Type = s
	total := uint32(0)
	for _, name := range path {
		o, mt, ok := member(t, name)
		if !ok {
			return 0, fmt.Errorf("struct %s has no %v in this kernel's BTF", typ, path)
		}
		total += o
		t = mt
	}
	return int32(total), nil
}

// member finds name in composite t (or its anonymous members): its
// offset in bytes and its type.
func member(t btf.Type, name string) (uint32, btf.Type, bool) {
	var ms []btf.Member
	switch c := btf.UnderlyingType(t).(type) {
	case *btf.Struct:
		ms = c.Members
	case *btf.Union:
		ms = c.Members
	default:
		return 0, nil, false
	}
	for _, m := range ms {
		if m.Name == name {
			return m.Offset.Bytes(), m.Type, true
		}
		if m.Name == "" {
			if o, mt, ok := member(m.Type, name); ok {
				return m.Offset.Bytes() + o, mt, true
			}
		}
	}
	return 0, nil, false
}
