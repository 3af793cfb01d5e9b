# libexperiment — build, demo, test, install.
#
#   make demo      install what is missing, build the library, run examples/c/quickstart.c on the demo datafile
#   make test      everything: Swift tests, C examples (-Werror), the ABI/symbol checks, pytest incl. differential
#   make lib       the shipping build: .build/release/libexperiment.so (static Swift stdlib, SONAME, exp_* only)
#   make cli       .build/release/experiment-cli (validate, decide, explain, batch)
#   make install PREFIX=/usr/local   library (+ SONAME links), header, pkg-config file
#   make bench     benchmarks side by side with the reference SDK (see benchmarks/README.md)

PREFIX      ?= /usr/local
LIBDIR      ?= $(PREFIX)/lib
INCLUDEDIR  ?= $(PREFIX)/include
VERSION     := $(shell sed -n 's/^\#define EXP_VERSION_STRING "\(.*\)"/\1/p' include/experiment.h)
MAJOR       := $(firstword $(subst ., ,$(VERSION)))
RELEASE_DIR := .build/release
LIB         := $(RELEASE_DIR)/libexperiment.so
CC          ?= cc
CFLAGS_STRICT := -std=c11 -Wall -Wextra -Werror -pedantic -O2 -Iinclude
CXX         ?= c++
CXXFLAGS_STRICT := -std=c++17 -Wall -Wextra -Werror -pedantic -O2 -Iinclude -Ibindings/cpp
LINK_LOCAL  := -L$(RELEASE_DIR) -lexperiment -Wl,-rpath,$(CURDIR)/$(RELEASE_DIR)
PYTHON      ?= python3
APT_PACKAGES := libjson-c-dev libsqlite3-dev libcurl4-openssl-dev libhiredis-dev pkg-config
# What only the tests need: a real redis-server for the shared profile store tests.
TEST_APT_PACKAGES := redis-server
PIP_TEST_PACKAGES := pytest optimizely-sdk==5.7.0 openfeature-sdk==0.10.0

.PHONY: all deps test-deps lib cli demo python-speedups test test-swift test-c test-cpp test-segments-c test-cli test-install test-abi test-python test-fuzz test-sanitize fuzz install \
        bench clean

all: lib

# Debian packages, installed only when missing (apt-get update first, once): `deps` for the build,
# `test-deps` adds what the tests need (redis-server, pytest, the reference SDK).
define apt_install
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
endef

deps:
	$(call apt_install,$(APT_PACKAGES))

test-deps: deps
	$(call apt_install,$(TEST_APT_PACKAGES))
	@$(PYTHON) -c "import pytest, optimizely, openfeature.api" 2>/dev/null || $(PYTHON) -m pip install -q $(PIP_TEST_PACKAGES)

lib: deps
	swift build -c release -Xswiftc -static-stdlib --product experiment
	@# Programs linked against the build record the SONAME: give it a file name to resolve to.
	ln -sf libexperiment.so $(RELEASE_DIR)/libexperiment.so.$(MAJOR)
	@echo "built $(LIB)"

CLI := $(RELEASE_DIR)/experiment-cli

# The command-line tool (static Swift stdlib like the library).
cli: deps
	swift build -c release -Xswiftc -static-stdlib --product experiment-cli
	@echo "built $(CLI)"

$(RELEASE_DIR)/quickstart: examples/c/quickstart.c include/experiment.h lib
	$(CC) $(CFLAGS_STRICT) -o $@ examples/c/quickstart.c $(LINK_LOCAL)

$(RELEASE_DIR)/async_start: examples/c/async_start.c include/experiment.h lib
	$(CC) $(CFLAGS_STRICT) -o $@ examples/c/async_start.c $(LINK_LOCAL)

demo: $(RELEASE_DIR)/quickstart
	$(RELEASE_DIR)/quickstart examples/datafiles/demo.json

test: test-deps lib test-abi test-c test-cpp test-segments-c test-cli test-install test-swift test-python test-fuzz test-sanitize
	@echo "make test: all suites passed"

# Test programs keep sticky bucketing, overrides and queued events in a private state directory under
# .build (never the user's own), and a test that installs no event dispatcher and names no event_endpoint
# never reaches the internet (the pipeline tests pass their own 127.0.0.1 endpoint).
TEST_STATE_HOME := $(CURDIR)/.build/test-state
TEST_TARGETS := test test-swift test-c test-cpp test-segments-c test-cli test-install test-python test-fuzz test-sanitize
$(TEST_TARGETS) bench: export XDG_STATE_HOME = $(TEST_STATE_HOME)
$(TEST_TARGETS): export EXPERIMENT_EVENT_ENDPOINT = none
# ... and a client started by sdk_key fetches no datafile unless it names its own datafile_url_template.
$(TEST_TARGETS): export EXPERIMENT_DATAFILE_URL_TEMPLATE = none

test-swift:
	swift test

# The shipped .so: only exp_* exported, SONAME with the major version, no toolchain path in its deps.
test-abi: lib
	@extra=$$(nm -D --defined-only $(LIB) | awk '{print $$NF}' | grep -v '^exp_' | grep -v '^_init$$\|^_fini$$' || true); \
	  if [ -n "$$extra" ]; then echo "exported non-exp_ symbols:"; echo "$$extra" | head; exit 1; fi
	@readelf -d $(LIB) | grep -q "SONAME.*libexperiment.so.$(MAJOR)" || { echo "SONAME is not libexperiment.so.$(MAJOR)"; exit 1; }
	@if ldd $(LIB) | grep -q swift; then echo "libexperiment.so depends on the Swift toolchain:"; ldd $(LIB); exit 1; fi
	@if readelf -d $(LIB) | grep -q 'RUNPATH\|RPATH.*swift'; then readelf -d $(LIB) | grep -i path; fi
	@echo "ABI checks passed: $$(nm -D --defined-only $(LIB) | grep -c ' exp_') exp_* symbols, SONAME libexperiment.so.$(MAJOR)"

# Sigma example (typed flags, the user's flags / experiments / holdouts, user properties).
$(RELEASE_DIR)/sigma: examples/c/sigma.c include/experiment.h lib
	$(CC) $(CFLAGS_STRICT) -o $@ examples/c/sigma.c $(LINK_LOCAL)

test-c: $(RELEASE_DIR)/quickstart $(RELEASE_DIR)/async_start $(RELEASE_DIR)/sigma
	rm -rf $(TEST_STATE_HOME)
	$(RELEASE_DIR)/quickstart examples/datafiles/demo.json > /dev/null
	state=$$(mktemp -d) && $(RELEASE_DIR)/async_start examples/datafiles demo $$state > /dev/null && rm -rf $$state
	$(RELEASE_DIR)/sigma examples/datafiles/demo.json > /dev/null
	@echo "C examples built with $(CFLAGS_STRICT) and ran"

# Real-time segments: examples/c/segments.c (-Werror -pedantic) against a local ODP stand-in server.
test-segments-c: lib
	CC="$(CC)" PYTHON=$(PYTHON) bash tests/odp/test_segments_c.sh $(RELEASE_DIR)

$(RELEASE_DIR)/quickstart-cpp: examples/cpp/quickstart.cpp bindings/cpp/experiment.hpp include/experiment.h lib
	$(CXX) $(CXXFLAGS_STRICT) -o $@ examples/cpp/quickstart.cpp $(LINK_LOCAL)

$(RELEASE_DIR)/sigma-cpp: examples/cpp/sigma.cpp bindings/cpp/experiment.hpp include/experiment.h lib
	$(CXX) $(CXXFLAGS_STRICT) -o $@ examples/cpp/sigma.cpp $(LINK_LOCAL)

test-cpp: $(RELEASE_DIR)/quickstart-cpp $(RELEASE_DIR)/sigma-cpp
	$(RELEASE_DIR)/quickstart-cpp examples/datafiles/demo.json > /dev/null
	$(RELEASE_DIR)/sigma-cpp examples/datafiles/demo.json > /dev/null
	@echo "C++ example built with $(CXXFLAGS_STRICT) and ran"

# A short libFuzzer round per harness over the C ABI's parsers (regressions replayed first); `make fuzz` runs
# long rounds against a coverage-instrumented build of the library. Run as fuzz/README.md says, without the
# test environment (no EXPERIMENT_EVENT_ENDPOINT=none: the built-in event pipeline and its logging threads
# are live, as for a user); run.sh gives the harnesses a state directory of their own under .build/fuzz.
FUZZ_SECONDS ?= 10
test-fuzz: lib
	env -u EXPERIMENT_EVENT_ENDPOINT -u XDG_STATE_HOME bash fuzz/run.sh $(FUZZ_SECONDS)

fuzz: lib
	FUZZ_INSTRUMENTED=1 bash fuzz/run.sh 600

# The library built with ThreadSanitizer and with AddressSanitizer, under a multithreaded stress program.
test-sanitize: deps
	bash tests/sanitize/run.sh

test-cli: lib cli
	bash tests/cli/test_cli.sh $(CLI)

# make install into a temporary prefix, then build the examples with pkg-config against that copy.
test-install: lib
	MAKE="$(MAKE)" CC="$(CC)" CXX="$(CXX)" bash tests/install/test_install.sh
	PYTHON=$(PYTHON) bash tests/install/test_pip.sh

# The binding's optional C accelerator for decide (bindings/python/experiment/_speedups.c). It links
# nothing: the binding hands it the library's function addresses. Skipped when Python.h is missing.
PY_INCLUDE  := $(shell $(PYTHON) -c "import sysconfig; print(sysconfig.get_paths()['include'])" 2>/dev/null)
PY_EXT      := $(shell $(PYTHON) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))" 2>/dev/null)
SPEEDUPS    := bindings/python/experiment/_speedups$(PY_EXT)

python-speedups:
	@if [ -f "$(PY_INCLUDE)/Python.h" ]; then \
	  $(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -shared -Iinclude -I$(PY_INCLUDE) \
	    -o $(SPEEDUPS) bindings/python/experiment/_speedups.c && echo "built $(SPEEDUPS)"; \
	else echo "Python.h not found under '$(PY_INCLUDE)': the binding runs without its C accelerator"; fi

# The whole suite with the accelerator, then the decide tests once more through the pure ctypes path.
test-python: test-deps lib python-speedups
	EXPERIMENT_LIBRARY=$(CURDIR)/$(LIB) PYTHONPATH=$(CURDIR)/bindings/python \
	  $(PYTHON) -m pytest -q bindings/python/tests
	EXPERIMENT_NO_SPEEDUPS=1 EXPERIMENT_LIBRARY=$(CURDIR)/$(LIB) PYTHONPATH=$(CURDIR)/bindings/python \
	  $(PYTHON) -m pytest -q bindings/python/tests/test_decide.py bindings/python/tests/test_input_errors.py \
	    bindings/python/tests/test_speedups.py bindings/python/tests/test_user_context.py

install: lib
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 0755 $(LIB) $(DESTDIR)$(LIBDIR)/libexperiment.so.$(VERSION)
	ln -sf libexperiment.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libexperiment.so.$(MAJOR)
	ln -sf libexperiment.so.$(MAJOR) $(DESTDIR)$(LIBDIR)/libexperiment.so
	install -m 0644 include/experiment.h $(DESTDIR)$(INCLUDEDIR)/experiment.h
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCLUDEDIR@|$(INCLUDEDIR)|; s|@VERSION@|$(VERSION)|' \
	  experiment.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/experiment.pc
	@echo "installed libexperiment $(VERSION) under $(DESTDIR)$(PREFIX)"

# The benchmarks also time eppo-server-sdk (a native-core Python SDK) for scale, when it installs.
BENCH_PIP_PACKAGES := eppo-server-sdk==4.4.1

bench: lib test-deps python-speedups
	@$(PYTHON) -c "import eppo_client" 2>/dev/null || $(PYTHON) -m pip install -q $(BENCH_PIP_PACKAGES) \
	  || echo "eppo-server-sdk did not install: its comparison row is skipped"
	bash benchmarks/run.sh

clean:
	rm -rf .build .build-fuzz .build-thread .build-address
