// Command nslab-corpus runs every Kathara lab under a directory (a
// checkout of KatharaFramework/Kathara-Labs, or another course's labs) as
// a teacher would, with the nslab binary given: nslab import kathara,
// validate, deploy, check --wait, destroy; and prints a table: per lab,
// each stage passed or not, and the reason of the first that did not
// (make corpus-kathara KATHARA_LABS=DIR). Nothing is downloaded: the
// labs are the directory's.
//
// A lab is a directory holding lab.conf. Its lab file is written to a
// temporary directory (the original is not touched), under the name the
// import gives it. A lab converged when check exits 0 with 0 broken; it
// destroyed clean when destroy exits 0 and no namespace of the lab's is
// left.
//
//	nslab-corpus -skip 'main-labs/(p4|sdn-openflow)/' ~/Kathara-Labs
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/nslab/nslab/internal/corpus"
	"github.com/nslab/nslab/internal/labname"
)

func main() {
	nslab := flag.String("nslab", "bin/nslab", "the nslab binary")
	skip := flag.String("skip", "", "leave out the labs whose path under DIR matches this regular expression")
	wait := flag.Duration("wait", 120*time.Second, "how long check waits for a lab's routing to converge")
	parallel := flag.Int("parallel", 1, "labs run at once, each under a random name of its own (the import's names may repeat)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: nslab-corpus [-nslab BIN] [-skip REGEXP] [-wait D] DIR")
		os.Exit(2)
	}
	var re *regexp.Regexp
	if *skip != "" {
		var err error
		if re, err = regexp.Compile(*skip); err != nil {
			fmt.Fprintln(os.Stderr, "nslab-corpus: -skip:", err)
			os.Exit(2)
		}
	}
	r := corpus.Runner{NSLab: *nslab, Wait: *wait, Skip: re, Progress: os.Stderr, Parallel: *parallel}
	if *parallel > 1 {
		r.Name = func(string) string { return labname.Random("k") }
	}
	results, err := r.Run(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "nslab-corpus:", err)
		os.Exit(1)
	}
	corpus.Table(os.Stdout, results)
	for _, x := range results {
		if !x.DestroyedClean() {
			os.Exit(1) // a lab that leaves something behind is a failure of nslab's
		}
	}
}
