// Package whatif is a discrete-event queueing simulator of the three ways
// one GPU is shared (MIG, MPS, time-slicing), after the textbook queueing
// model of GPU sharing (docs/advisor.md): tenants send Poisson requests that each need a
// fixed service time on the whole card, and each mechanism turns that into
// latencies.
//
//   - MIG: every tenant owns a fraction f of the card (one 1/N slice by
//     default); its requests queue FIFO on that instance alone and take
//     S/f. Each instance is an M/D/1 queue, untouched by its neighbours.
//   - MPS: every tenant's requests queue FIFO in its own client, all on the
//     whole card; a request's service time is S(1 + c·k), k the number of
//     tenants with work in flight when it arrives (its own queue included
//     when busy, as the reference model counts), c the contention coefficient (0.18). While a hostile
//     tenant has work in flight its neighbours see the hostile
//     coefficient instead.
//   - time-slicing: one FIFO queue for the whole card in arrival order, a
//     request runs alone at full speed and pays the switch cost when the
//     previous request served was another tenant's.
//
// A request is served when it completes inside the simulated duration;
// latency is its wait plus its service. Percentiles come from a
// log-linear histogram (buckets 2^-8 wide, relative; a percentile within 0.2%), so a month of traffic
// simulates in constant memory. The package is pure: no I/O but writing a
// Result to the io.Writer it is given (Write: text or JSON, the formats
// gpuledger whatif prints), no clock, the random stream fixed by a seed.
package whatif
