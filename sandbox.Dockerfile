# The sandbox image: every bash call the model makes runs in a fresh container of it.
# Built by `sandloop image build` (or on first `sandloop run`). When the base image
# cannot be pulled, sandloop bootstraps it with debootstrap from the host's own
# Debian mirror and imports it under this name.
FROM debian:bookworm-slim

ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8

# What an agent in a coding task reaches for first.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      bash coreutils findutils grep sed gawk diffutils patch file \
      python3 python3-venv python3-pip git ca-certificates curl wget procps less tree \
      jq unzip xz-utils bzip2 zip make gcc g++ libc6-dev sqlite3 vim-tiny nano \
 && rm -rf /var/lib/apt/lists/* \
 && ln -sf /usr/bin/python3 /usr/local/bin/python

# The workspace belongs to whoever invoked sandloop, so git must not refuse it.
RUN git config --system --add safe.directory '*' \
 && git config --system init.defaultBranch main \
 && mkdir -p /workspace /home/sandbox && chmod 1777 /home/sandbox

ENV HOME=/home/sandbox
WORKDIR /workspace
LABEL org.opencontainers.image.title="sandloop sandbox"
CMD ["bash"]
