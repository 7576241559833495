"""The report as JSON, Markdown and JUnit, and its Plotly figures."""
