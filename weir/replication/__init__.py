"""Replication: leader-side ISR/HW tracking, the follower fetcher, the produce purgatory."""
