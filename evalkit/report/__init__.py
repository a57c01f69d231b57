"""The release report: its data model (report.json), the summarize logic and the site renderer."""
