// Package report holds what nslab bench measures, as values, and how
// each renders: a run (Report), runs measured together (GroupReport),
// the searches (SearchResult, MLRResult), RFC 2544's benchmarks
// (RFC2544Result), repeated rounds' summaries (FigureSummary) and
// comparisons (Comparison, from results files or variants).
//
// The rules it follows, and cmd with it:
//   - a result type renders itself here, where it is defined; the
//     measuring package (pktgen/bench) fills the values and renders
//     nothing;
//   - WriteOutput is the one writer: cmd chooses the format (json, csv,
//     markdown, table) and the writer, and every result type goes
//     through it; table and markdown layouts come from the same calls
//     (tabular);
//   - results and errors name the lab's things (nodes, interfaces,
//     traffic runs), never a command-line flag.
//
// Nothing here touches the machine.
package report
