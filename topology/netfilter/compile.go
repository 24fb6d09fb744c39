package netfilter

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/sys/unix"
)

// compiled is a rule being compiled: its expressions, and nft's words for
// them in the same order.
type compiled struct {
	exprs  []expr.Any
	words  []string
	family bool // the meta nfproto dependency is in already
}

// add appends expressions and, unless empty, their words.
func (c *compiled) add(words string, es ...expr.Any) {
	c.exprs = append(c.exprs, es...)
	if words != "" {
		c.words = append(c.words, words)
	}
}

func (c *compiled) text() string { return strings.Join(c.words, " ") }

// Connection tracking state bits (NF_CT_STATE_*_BIT).
var stateBits = map[string]byte{"invalid": 1, "established": 2, "related": 4, "new": 8}

// IP protocol numbers of the protocols a rule can match.
var protoNumbers = map[string]byte{"tcp": unix.IPPROTO_TCP, "udp": unix.IPPROTO_UDP, "icmp": unix.IPPROTO_ICMP, "icmpv6": unix.IPPROTO_ICMPV6}

// compileMatch compiles a match in the order nft compiles the rule
// "iifname I oifname O ip saddr S ip daddr D tcp dport P ct state X".
func compileMatch(m spec.Match) *compiled {
	c := &compiled{}
	if m.In != "" {
		c.add("iifname \""+m.In+"\"", &expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1}, cmpEq(ifname(m.In)))
	}
	if m.Out != "" {
		c.add("oifname \""+m.Out+"\"", &expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1}, cmpEq(ifname(m.Out)))
	}
	if m.From.IsValid() {
		c.prefix("saddr", m.From)
	}
	if m.To.IsValid() {
		c.prefix("daddr", m.To)
	}
	switch {
	case m.Port != 0:
		c.add(m.Proto+" dport "+strconv.Itoa(m.Port),
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1}, cmpEq([]byte{protoNumbers[m.Proto]}),
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			cmpEq([]byte{byte(m.Port >> 8), byte(m.Port)}))
	case m.Proto != "":
		// By number: nft resolves protocol names through /etc/protocols,
		// which a minimal system (a container, the VM) may not have.
		c.add(fmt.Sprintf("meta l4proto %d", protoNumbers[m.Proto]), &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1}, cmpEq([]byte{protoNumbers[m.Proto]}))
	}
	if len(m.State) > 0 {
		var bits byte
		for _, s := range m.State {
			bits |= stateBits[s]
		}
		c.add("ct state "+strings.Join(m.State, ","),
			&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: []byte{bits, 0, 0, 0}, Xor: []byte{0, 0, 0, 0}},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{0, 0, 0, 0}})
	}
	return c
}

// prefix compiles "ip saddr 10.0.0.0/8" (or daddr, or ip6): nft loads only
// the prefix's whole bytes when its length is a multiple of 8, and masks
// the whole address otherwise.
func (c *compiled) prefix(field string, p netip.Prefix) {
	a := p.Addr()
	word, offset, nfproto := "ip", uint32(12), byte(unix.NFPROTO_IPV4)
	if a.Is6() {
		word, offset, nfproto = "ip6", 8, unix.NFPROTO_IPV6
	}
	size := uint32(a.BitLen() / 8)
	if field == "daddr" {
		offset += size
	}
	if !c.family {
		c.add("", &expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1}, cmpEq([]byte{nfproto}))
		c.family = true
	}
	text := p.String()
	if p.Bits() == a.BitLen() {
		text = a.String()
	}
	c.add(word + " " + field + " " + text)
	bytes := a.AsSlice()
	switch bits := p.Bits(); {
	case bits == a.BitLen():
		c.add("", &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: size}, cmpEq(bytes))
	case bits > 0 && bits%8 == 0:
		n := uint32(bits / 8)
		c.add("", &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: n}, cmpEq(bytes[:n]))
	default:
		mask := netip.PrefixFrom(a, bits)
		m := maskBytes(mask)
		c.add("", &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: size},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: size, Mask: m, Xor: make([]byte, size)},
			cmpEq(bytes))
	}
}

// maskBytes is the netmask of a prefix, as bytes.
func maskBytes(p netip.Prefix) []byte {
	out := make([]byte, p.Addr().BitLen()/8)
	for i := 0; i < p.Bits(); i++ {
		out[i/8] |= 0x80 >> (i % 8)
	}
	return out
}

func cmpEq(data []byte) *expr.Cmp { return &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: data} }

// ifname is an interface name as nft compares it: padded to IFNAMSIZ.
func ifname(name string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, name)
	return b
}
