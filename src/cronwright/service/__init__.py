"""The operations every front shares: reads, changes, lifecycle, quota, backfill, seeds, dry run."""
