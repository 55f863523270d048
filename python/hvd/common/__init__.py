"""What every framework module shares: exceptions, basics, process sets."""
