"""Streamlit helpers shared by the entry file and the pages: run configuration state, caching, rendering."""
