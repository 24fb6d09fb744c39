// SPDX-License-Identifier: GPL-2.0
// nslab's XDP forwarding fast path: a node's route lookup (bpf_fib_lookup,
// its own FIB and neighbours) and a redirect through a devmap of its
// interfaces; what it cannot forward goes to the stack, counted by why.
// After the kernel's samples/bpf/xdp_fwd_kern.c.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define AF_INET 2
#define AF_INET6 10
#define IP_MF 0x2000
#define IP_OFFSET 0x1FFF

// Why a packet was forwarded, passed to the stack or dropped: the slots
// of counts (keep in step with reasons in xdpfwd.go).
enum reason {
	FORWARDED,
	PASS_NOT_IP,      // ARP, LLDP, VLAN-tagged: not IPv4 or IPv6
	PASS_TTL,         // TTL or hop limit 1 or 0: the stack sends time exceeded
	PASS_OPTIONS,     // IPv4 options or a fragment, an IPv6 hop-by-hop header
	PASS_LOCAL,       // to the node itself (BPF_FIB_LKUP_RET_NOT_FWDED)
	PASS_NO_NEIGH,    // no neighbour entry yet: the stack resolves it
	PASS_FIB_OTHER,   // blackhole, unreachable, prohibit, forwarding off, MTU...
	PASS_NOT_IN_MAP,  // the route leaves by an interface the program does not redirect to
	PASS_SCOPE,       // IPv6 link-local source or destination, or multicast: never routed
	DROP_MALFORMED,   // shorter than its headers say
	REASONS,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, REASONS);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 256);
} ports SEC(".maps");

static __always_inline int count(__u32 r, int action)
{
	__u64 *n = bpf_map_lookup_elem(&counts, &r);
	if (n)
		*n += 1;
	return action;
}

// ip_decrease_ttl as the kernel's include/net/ip.h: the checksum updated
// incrementally (RFC 1624).
static __always_inline void decrease_ttl(struct iphdr *iph)
{
	__u32 check = (__u32)iph->check;
	check += (__u32)bpf_htons(0x0100);
	iph->check = (__sum16)(check + (check >= 0xFFFF));
	iph->ttl--;
}

// link_local_or_multicast: fe80::/10 or ff00::/8, which a router does
// not forward (the stack answers with what RFC 4291 asks).
static __always_inline int link_local_or_multicast(struct in6_addr *a)
{
	__u8 b0 = a->in6_u.u6_addr8[0], b1 = a->in6_u.u6_addr8[1];
	return b0 == 0xff || (b0 == 0xfe && (b1 & 0xc0) == 0x80);
}

static __always_inline int lookup(struct xdp_md *ctx, struct bpf_fib_lookup *fib, struct ethhdr *eth, struct iphdr *iph, struct ipv6hdr *ip6h)
{
	int rc = bpf_fib_lookup(ctx, fib, sizeof(*fib), 0);
	switch (rc) {
	case BPF_FIB_LKUP_RET_SUCCESS:
		break;
	case BPF_FIB_LKUP_RET_NOT_FWDED:
		return count(PASS_LOCAL, XDP_PASS);
	case BPF_FIB_LKUP_RET_NO_NEIGH:
		return count(PASS_NO_NEIGH, XDP_PASS);
	default:
		return count(PASS_FIB_OTHER, XDP_PASS);
	}
	if (!bpf_map_lookup_elem(&ports, &fib->ifindex))
		return count(PASS_NOT_IN_MAP, XDP_PASS);
	if (iph)
		decrease_ttl(iph);
	else if (ip6h)
		ip6h->hop_limit--;
	__builtin_memcpy(eth->h_dest, fib->dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib->smac, ETH_ALEN);
	count(FORWARDED, 0);
	return bpf_redirect_map(&ports, fib->ifindex, 0);
}

SEC("xdp")
int xdp_forward(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct ethhdr *eth = data;
	struct bpf_fib_lookup fib = {};

	if ((void *)(eth + 1) > data_end)
		return count(DROP_MALFORMED, XDP_DROP);
	fib.ifindex = ctx->ingress_ifindex;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = (void *)(eth + 1);
		if ((void *)(iph + 1) > data_end)
			return count(DROP_MALFORMED, XDP_DROP);
		if (iph->ttl <= 1)
			return count(PASS_TTL, XDP_PASS);
		if (iph->ihl != 5 || (iph->frag_off & bpf_htons(IP_MF | IP_OFFSET)))
			return count(PASS_OPTIONS, XDP_PASS);
		fib.family = AF_INET;
		fib.tos = iph->tos;
		fib.l4_protocol = iph->protocol;
		fib.tot_len = bpf_ntohs(iph->tot_len);
		fib.ipv4_src = iph->saddr;
		fib.ipv4_dst = iph->daddr;
		return lookup(ctx, &fib, eth, iph, 0);
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6h = (void *)(eth + 1);
		if ((void *)(ip6h + 1) > data_end)
			return count(DROP_MALFORMED, XDP_DROP);
		if (ip6h->hop_limit <= 1)
			return count(PASS_TTL, XDP_PASS);
		if (ip6h->nexthdr == IPPROTO_HOPOPTS)
			return count(PASS_OPTIONS, XDP_PASS);
		if (link_local_or_multicast(&ip6h->daddr) || link_local_or_multicast(&ip6h->saddr))
			return count(PASS_SCOPE, XDP_PASS);
		fib.family = AF_INET6;
		fib.flowinfo = *(__be32 *)ip6h & bpf_htonl(0x0FFFFFFF);
		fib.l4_protocol = ip6h->nexthdr;
		fib.tot_len = bpf_ntohs(ip6h->payload_len);
		__builtin_memcpy(fib.ipv6_src, &ip6h->saddr, sizeof(fib.ipv6_src));
		__builtin_memcpy(fib.ipv6_dst, &ip6h->daddr, sizeof(fib.ipv6_dst));
		return lookup(ctx, &fib, eth, 0, ip6h);
	}
	return count(PASS_NOT_IP, XDP_PASS);
}

// xdp_pass lets everything through: on a veth that a redirect sends to,
// its peer needs an XDP program (which gives the peer the NAPI instance
// the redirected frames are received in).
SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
