package netfilter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// nftables lists are netlink dumps too, and the kernel marks a dump that
// a ruleset change interrupted (NLM_F_DUMP_INTR), but google/nftables
// does not report it. nft itself reads the ruleset's generation before
// and after it lists, and lists again when it moved; nslab does the same.

// genAttempts bounds the reads of one ruleset.
const genAttempts = 10

// errChanging is returned when every read saw the ruleset change.
var errChanging = errors.New("the ruleset kept changing while it was read")

// generation reads the ruleset generation of the namespace nsFD refers
// to; the kernel increases it with every committed change. It runs in the
// caller's namespace (the socket is opened in nsFD's).
//
// Equivalent to: nft list ruleset (its first request, NFT_MSG_GETGEN)
func generation(nsFD int) (uint32, error) {
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: nsFD})
	if err != nil {
		return 0, fmt.Errorf("open a netfilter socket: %w", err)
	}
	defer func() { _ = c.Close() }() // a socket only read from
	req := netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_GETGEN), Flags: netlink.Request},
		Data:   []byte{unix.AF_UNSPEC, unix.NFNETLINK_V0, 0, 0}, // struct nfgenmsg
	}
	msgs, err := c.Execute(req)
	if err != nil {
		return 0, fmt.Errorf("read the ruleset generation: %w", err)
	}
	for _, m := range msgs {
		if len(m.Data) < 4 {
			continue
		}
		ad, err := netlink.NewAttributeDecoder(m.Data[4:])
		if err != nil {
			return 0, fmt.Errorf("read the ruleset generation: %w", err)
		}
		ad.ByteOrder = binary.BigEndian
		for ad.Next() {
			if ad.Type() == unix.NFTA_GEN_ID {
				return ad.Uint32(), nil
			}
		}
	}
	return 0, errors.New("read the ruleset generation: no NFTA_GEN_ID in the answer")
}

// consistent runs read until the ruleset generation is the same before
// and after it, at most genAttempts times, waiting a little longer after
// each moved one (1 ms, 2 ms, ...: 45 ms in all) so that a burst of
// changes can pass.
func consistent(nsFD int, read func() error) error {
	for i := range genAttempts {
		if i > 0 {
			time.Sleep(time.Duration(i) * time.Millisecond)
		}
		before, err := generation(nsFD)
		if err != nil {
			return err
		}
		if err := read(); err != nil {
			return err
		}
		after, err := generation(nsFD)
		if err != nil {
			return err
		}
		if after == before {
			return nil
		}
	}
	return fmt.Errorf("%w (%d reads)", errChanging, genAttempts)
}
