"""SWE-bench's own grading (the official `swebench` package), used for SWE-bench's cases and logs."""
