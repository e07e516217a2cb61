# onnxkit serve in a container: Debian 12, built from source with the README's scripts, run
# as a stateless Open Inference Protocol (KServe v2) replica. Build from the repository root:
#   docker build -t onnxkit-serve .
#   docker run -p 8080:8080 -v $PWD/models:/models onnxkit-serve
# Models: a repository folder NAME/VERSION/model.onnx mounted at /models. PORT (KServe sets
# it; default 8080 here) is the port. A shared response cache goes in Redis
# (ONNXKIT_CACHE=redis://HOST:6379?ttl=300), so replicas keep no state of their own.
FROM debian:12 AS build
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends sudo ca-certificates \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The README's scripts: Debian packages, then the Release build (the tests are not built).
RUN scripts/install_deps.sh && scripts/build.sh -DONNXKIT_BUILD_TESTS=OFF \
    && ninja -C build onnxkit

FROM debian:12
# The runtime libraries the binary links (no compilers, no -dev packages).
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends \
      libprotobuf32 libonnx1 libdnnl2 libgomp1 libfmt9 libre2-9 libjpeg62-turbo libpng16-16 \
      libwebp7 libtiff6 libopenjp2-7 libprometheus-cpp-core1.0 libhiredis0.14 libxxhash0 libsimdjson14 \
      zlib1g ocl-icd-libopencl1 \
      tini \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 onnxkit
COPY --from=build /src/build/onnxkit /usr/local/bin/onnxkit
USER onnxkit
ENV PORT=8080 ONNXKIT_CACHE=""
EXPOSE 8080
# tini forwards SIGTERM, so a rolling update drains the requests in flight.
ENTRYPOINT ["/usr/bin/tini", "--", "/bin/sh", "-c", \
  "exec onnxkit serve --host 0.0.0.0 --model-repository /models ${ONNXKIT_CACHE:+--cache $ONNXKIT_CACHE} \"$@\"", "onnxkit"]
