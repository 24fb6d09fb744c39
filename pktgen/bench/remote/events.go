package remote

import (
	"errors"
	"fmt"
	"maps"
)

// Event has host make event (as bench --event takes it) on its share of
// the lab, and returns when it has.
func Event(t Transport, host, event string) error {
	answers, err := t.Ask(map[string]Request{host: {Op: OpEvent, Event: event}})
	if err != nil {
		return err
	}
	return answered(answers, host)
}

// OpenOffPath has each of hosts start counting its lab interfaces (for a
// run with events, whose traffic may go round the path).
func OpenOffPath(t Transport, hosts []string, ipv6 bool) error {
	asks := map[string]Request{}
	for _, h := range hosts {
		asks[h] = Request{Op: OpOffOpen, IPv6: ipv6}
	}
	return askAll(t, asks, nil)
}

// OffPath is what every lab interface of hosts counted since
// OpenOffPath, by NODE:IF (node names are the lab's: one map holds every
// host's). A host that cannot say is named in the error; the others'
// counts are returned still.
func OffPath(t Transport, hosts []string) (map[string]Counted, error) {
	asks := map[string]Request{}
	for _, h := range hosts {
		asks[h] = Request{Op: OpOffRead}
	}
	out := map[string]Counted{}
	err := askAll(t, asks, func(a Reply) { maps.Copy(out, a.Off) })
	return out, err
}

// askAll asks and passes each host's answer to each (nil: none wanted).
func askAll(t Transport, asks map[string]Request, each func(Reply)) error {
	if len(asks) == 0 {
		return nil
	}
	answers, err := t.Ask(asks)
	if err != nil {
		return err
	}
	var errs []error
	for host := range asks {
		if err := answered(answers, host); err != nil {
			errs = append(errs, err)
		} else if each != nil {
			each(answers[host])
		}
	}
	return errors.Join(errs...)
}

// answered is host's answer's error, naming the host.
func answered(answers map[string]Reply, host string) error {
	a, ok := answers[host]
	switch {
	case !ok:
		return fmt.Errorf("host %s: no answer", host)
	case a.Error != "":
		return fmt.Errorf("host %s: %s", host, a.Error)
	}
	return nil
}
