"""Pure ranking stages over candidate lists. No I/O: everything here is tested from tables."""
