"""`make bench`: taskpool's throughput, latency, enqueue rate and depth beside pgbench ceilings."""
