package xdpfwd

// The BPF object is generated from xdpfwd.c and committed (cilium/ebpf's
// bpf2go, as cilium does): building nslab needs no C compiler. After a
// change to xdpfwd.c, with clang and libbpf-dev installed: go generate ./topology/xdpfwd
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel fwd bpf/xdpfwd.c -- -I/usr/include/x86_64-linux-gnu
