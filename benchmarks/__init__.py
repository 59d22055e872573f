"""Weir benchmark harness: side-by-side throughput and latency against the Tansu peer.

See ``docs/benchmarks.md``. Every benchmark prints figures and ratios; none asserts on
absolute time. All traffic goes to 127.0.0.1 and every run is bounded in count and time.
"""
