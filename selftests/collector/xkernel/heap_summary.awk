# SPDX-License-Identifier: GPL-2.0
# heap_summary.awk: reads `go tool pprof -raw` of a kpprof heap profile and
# the workload's "truth FUNC COUNT SIZE KEPT" lines (three_sizes), prints
#   FUNC METRIC TRUTH ESTIMATE SIGMA
# for METRIC alloc_objects alloc_space inuse_objects inuse_space, where SIGMA
# is the standard deviation of the estimate under Poisson sampling at RATE
# bytes: an object of SIZE is sampled with p = 1 - exp(-SIZE/RATE) and then
# counts 1/p (Go's scaleHeapSample), so over N objects the count estimate
# has variance N (1 - p) / p, and the bytes estimate SIZE times that.
# usage: awk -v rate=R -f heap_summary.awk TRUTH RAW
FNR == 1 { file++ }
file == 1 && $1 == "truth" {
	fn[++nfn] = $2; count[$2] = $3; size[$2] = $4; kept[$2] = $5
	next
}
file == 2 && /^Samples:/ { sec = "s"; next }
file == 2 && /^Locations/ { sec = "l"; next }
file == 2 && /^Mappings/ { sec = "" }
file == 2 && sec == "s" && /^ *[0-9]+( +[0-9]+)+:/ {
	split($0, half, ":")
	split(half[1], v, " ")
	nsample++
	for (i = 1; i <= 4; i++)
		sv[nsample, i] = v[i]
	stack[nsample] = half[2]
	next
}
# A location line "ID: 0xADDR M=N FUNC FILE:LINE s=N", then one line
# "FUNC FILE:LINE s=N" per inlined frame; every name of the location counts.
file == 2 && sec == "l" && $1 ~ /^[0-9]+:$/ { id = $1 + 0; names[id] = " " $4 " "; next }
file == 2 && sec == "l" { names[id] = names[id] $1 " " }
END {
	for (s = 1; s <= nsample; s++) {
		n = split(stack[s], ids, " ")
		for (i = 1; i <= n; i++) {
			for (f = 1; f <= nfn; f++) {
				if (index(names[ids[i] + 0], " " fn[f] " ")) {
					for (m = 1; m <= 4; m++)
						est[fn[f], m] += sv[s, m]
					i = n
					break
				}
			}
		}
	}
	split("alloc_objects alloc_space inuse_objects inuse_space", metric, " ")
	for (f = 1; f <= nfn; f++) {
		name = fn[f]
		p = 1 - exp(-size[name] / rate)
		for (m = 1; m <= 4; m++) {
			objs = m <= 2 ? count[name] : kept[name]
			sd = sqrt(objs * (1 - p) / p)
			if (m % 2 == 0)
				sd *= size[name]
			printf "%s %s %d %d %.1f\n", name, metric[m], objs * (m % 2 ? 1 : size[name]),
			       est[name, m], sd
		}
	}
}
