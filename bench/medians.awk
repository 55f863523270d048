# The median of each (who, size) over a benchmark's runs: reads lines
# "RESULT WHO SIZE VALUE" (others are ignored), prints "WHO SIZE MEDIAN".
#   awk -f bench/medians.awk RAW | sort -k1,1 -k2,2n
$1 == "RESULT" { k = $2 " " $3; v[k] = v[k] " " $4 }
END {
  for (k in v) {
    n = split(substr(v[k], 2), a, " ")
    for (i = 1; i <= n; ++i)
      for (j = i + 1; j <= n; ++j)
        if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    print k " " a[int((n + 1) / 2)]
  }
}
