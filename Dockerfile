# The Training Pipeline Debugger as a Hugging Face Docker Space (or on any container host): hosted mode on,
# the demo kit's checkpoint built into the image, the app on port 8501 as user 1000.
FROM python:3.11.11-slim-bookworm

RUN useradd --create-home --uid 1000 user
USER user
ENV HOME=/home/user \
    PATH=/home/user/.local/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    DEBUGGER_HOSTED=1 \
    DEBUGGER_CACHE_DIR=/home/user/kit
WORKDIR /home/user/app

COPY --chown=user requirements.txt .
RUN pip install --no-cache-dir --user -r requirements.txt
COPY --chown=user . .
# A Space's disk does not persist: built here, the kit is in the image and a cold start builds nothing.
RUN python scripts/build_demo_kit.py

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=180s \
    CMD python -c "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).read() != b'ok')"
# ui.serve is `streamlit run` with the bound on uploads held in memory installed before the first request
# (ui/uploads.py); a visitor's upload is at most 50 MB.
CMD ["python", "-m", "ui.serve", "run", "app.py", "--server.port", "8501", "--server.maxUploadSize", "50", "--server.address", "0.0.0.0", "--server.allowedHosts", "*", "--server.headless", "true", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
