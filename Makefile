# libexperiment — build, demo, test, install.
#
#   make demo      install what is missing, build the library, run examples/c/quickstart.c on the demo datafile
#   make test      the test command (CI's): every layer in about 15 minutes on 2 cores — Swift tests, C and C++
#                  examples (-Werror), ABI/symbol checks, CLI, install, docs, pytest in parallel incl. the
#                  differential suite on fixed seeds, a Swift consumer package, a short fuzz round, ASan/UBSan
#   make test-full the same plus the long runs: the sdist's own Swift build, ThreadSanitizer, wide differential
#                  seed ranges, longer libFuzzer rounds
#   make lib       the shipping build: .build/release/libexperiment.so (static Swift stdlib, SONAME, exp_* only)
#   make cli       .build/release/experiment-cli (validate, decide, explain, batch)
#   make install PREFIX=/usr/local   library (stripped, SONAME links), headers, pkg-config, CMake package, CLI, docs
#   make uninstall PREFIX=/usr/local the same files removed (both take DESTDIR)
#   make wheel     .build/dist/: the Python sdist and a manylinux wheel with its libraries bundled (auditwheel)
#   make docs      API reference (Markdown) from include/experiment.h and the Python docstrings
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
TEST_APT_PACKAGES := redis-server cmake
PIP_TEST_PACKAGES := pytest pytest-xdist optimizely-sdk==5.7.0 openfeature-sdk==0.10.0 mypy==1.13.0 gunicorn

.PHONY: all deps test-deps lib cli docs uninstall demo python-speedups test test-full test-swift test-c test-cpp test-segments-c test-cli test-install test-docs test-abi test-python test-fuzz test-fuzz-long test-sanitize test-sanitize-address test-sanitize-thread \
        test-differential-wide test-vectors test-swiftpm fuzz install \
        wheel wheel-from-source test-sdist \
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
	@$(PYTHON) -c "import pytest, xdist, optimizely, openfeature.api, mypy, gunicorn" 2>/dev/null || $(PYTHON) -m pip install -q $(PIP_TEST_PACKAGES)

# The shipped library's compiler and linker flags (cross-module optimization, SONAME, exports map, lld,
# nodelete). They live in Sources/experiment/shipping.flags, not in Package.swift: SwiftPM refuses
# unsafeFlags in a package another package depends on by version. The CLI takes the -Xswiftc ones.
SHIPPING_FLAGS_FILE := Sources/experiment/shipping.flags
SHIPPING_FLAGS := $(shell sed 's/\#.*//' $(SHIPPING_FLAGS_FILE))
CLI_FLAGS      := $(shell sed -n 's/\#.*//; /^-Xswiftc/p' $(SHIPPING_FLAGS_FILE))

lib: deps
	swift build -c release -Xswiftc -static-stdlib --disable-local-rpath $(SHIPPING_FLAGS) --product experiment
	@# Programs linked against the build record the SONAME: give it a file name to resolve to.
	ln -sf libexperiment.so $(RELEASE_DIR)/libexperiment.so.$(MAJOR)
	@echo "built $(LIB)"

CLI := $(RELEASE_DIR)/experiment-cli

# The command-line tool (static Swift stdlib like the library).
cli: deps
	swift build -c release -Xswiftc -static-stdlib --disable-local-rpath $(CLI_FLAGS) --product experiment-cli
	@echo "built $(CLI)"

$(RELEASE_DIR)/quickstart: examples/c/quickstart.c include/experiment.h lib
	$(CC) $(CFLAGS_STRICT) -o $@ examples/c/quickstart.c $(LINK_LOCAL)

$(RELEASE_DIR)/async_start: examples/c/async_start.c include/experiment.h lib
	$(CC) $(CFLAGS_STRICT) -o $@ examples/c/async_start.c $(LINK_LOCAL)

demo: $(RELEASE_DIR)/quickstart
	$(RELEASE_DIR)/quickstart examples/datafiles/demo.json

# The two test tiers, each stage timed by tools/run_stages.sh (a table at the end). `make test` stays under
# 20 minutes on a fresh 2-core machine; what takes longer is scheduled in `make test-full`, never dropped.
FAST_STAGES := test-abi test-c test-cpp test-segments-c test-cli test-install test-docs test-swift test-swiftpm \
               test-python test-vectors test-fuzz test-sanitize-address
FULL_STAGES := $(FAST_STAGES) test-sdist test-sanitize-thread test-differential-wide test-fuzz-long

test: test-deps lib cli
	@MAKE="$(MAKE)" bash tools/run_stages.sh test $(FAST_STAGES)

test-full: test-deps lib cli
	@MAKE="$(MAKE)" bash tools/run_stages.sh test-full $(FULL_STAGES)

# Test programs keep sticky bucketing, overrides and queued events in a private state directory under
# .build (never the user's own), and a test that installs no event dispatcher and names no event_endpoint
# never reaches the internet (the pipeline tests pass their own 127.0.0.1 endpoint).
TEST_STATE_HOME := $(CURDIR)/.build/test-state
TEST_TARGETS := test test-full test-swift test-swiftpm test-c test-cpp test-segments-c test-cli test-install test-sdist \
                test-docs test-python test-fuzz test-fuzz-long test-sanitize test-sanitize-address test-sanitize-thread \
                test-differential-wide test-vectors
$(TEST_TARGETS) bench: export XDG_STATE_HOME = $(TEST_STATE_HOME)
$(TEST_TARGETS): export EXPERIMENT_EVENT_ENDPOINT = none
# ... and a client started by sdk_key fetches no datafile unless it names its own datafile_url_template.
$(TEST_TARGETS): export EXPERIMENT_DATAFILE_URL_TEMPLATE = none

test-swift:
	swift test

# The Swift package as a dependency: a consumer package made from the README's Swift section, depending on
# a tagged temporary clone of this repository by version, built and run on the demo datafile (committed
# sources only). SWIFTPM_CONFIGURATION=release builds it optimized (slower to build here).
SWIFTPM_CONFIGURATION ?= debug
test-swiftpm: deps
	bash tests/swiftpm/test_consumer.sh $(SWIFTPM_CONFIGURATION)

# The shipped .so: only exp_* exported, SONAME with the major version, no toolchain path in its deps, no RUNPATH.
test-abi: lib
	@extra=$$(nm -D --defined-only $(LIB) | awk '{print $$NF}' | grep -v '^exp_' | grep -v '^_init$$\|^_fini$$' || true); \
	  if [ -n "$$extra" ]; then echo "exported non-exp_ symbols:"; echo "$$extra" | head; exit 1; fi
	@readelf -d $(LIB) | grep -q "SONAME.*libexperiment.so.$(MAJOR)" || { echo "SONAME is not libexperiment.so.$(MAJOR)"; exit 1; }
	@if ldd $(LIB) | grep -q swift; then echo "libexperiment.so depends on the Swift toolchain:"; ldd $(LIB); exit 1; fi
	@# No RUNPATH: a library installed in /usr/lib must not search next to itself (--disable-local-rpath).
	@if readelf -d $(LIB) | grep -q 'RUNPATH\|RPATH'; then echo "libexperiment.so has a run path:"; readelf -d $(LIB) | grep -i path; exit 1; fi
	@echo "ABI checks passed: $$(nm -D --defined-only $(LIB) | grep -c ' exp_') exp_* symbols, SONAME libexperiment.so.$(MAJOR)"

# Sigma example (typed flags, the user's flags / experiments / holdouts, user properties).
$(RELEASE_DIR)/sigma: examples/c/sigma.c include/experiment.h lib
	$(CC) $(CFLAGS_STRICT) -o $@ examples/c/sigma.c $(LINK_LOCAL)

# Issue 18 item 5: 8 threads tracking, never EXP_ERR_TOO_LARGE for a full journal segment.
$(RELEASE_DIR)/concurrent_track: tests/events/concurrent_track.c include/experiment.h lib
	$(CC) $(CFLAGS_STRICT) -o $@ tests/events/concurrent_track.c $(LINK_LOCAL) -lpthread

# The attribute kinds, length-delimited calls and error decisions of the C ABI (tests/abi/inputs.c).
$(RELEASE_DIR)/inputs_c: tests/abi/inputs.c include/experiment.h lib
	$(CC) $(CFLAGS_STRICT) -o $@ tests/abi/inputs.c $(LINK_LOCAL)

# Kameleoon / Sigma calls: run-when-ready, delivery callbacks against a 127.0.0.1 endpoint, forced memberships
# by key, an experiment's flag values (tests/abi/callbacks.c).
$(RELEASE_DIR)/callbacks_c: tests/abi/callbacks.c tests/support/event_receiver.h include/experiment.h lib
	$(CC) $(CFLAGS_STRICT) -Itests/support -o $@ tests/abi/callbacks.c $(LINK_LOCAL) -lpthread

$(RELEASE_DIR)/deadlines_c: tests/abi/deadlines.c include/experiment.h lib
	$(CC) $(CFLAGS_STRICT) -o $@ tests/abi/deadlines.c $(LINK_LOCAL) -lpthread

# A client created before fork() works in parent and child, each event delivered once.
$(RELEASE_DIR)/fork_events: tests/events/fork_events.c tests/support/event_receiver.h include/experiment.h lib
	$(CC) $(CFLAGS_STRICT) -o $@ tests/events/fork_events.c $(LINK_LOCAL) -lpthread

# exp_client_optimizely_config_json: its errors and the demo datafile's document (tests/abi/optimizely_config.c).
$(RELEASE_DIR)/optimizely_config_c: tests/abi/optimizely_config.c include/experiment.h lib
	$(CC) $(CFLAGS_STRICT) -o $@ tests/abi/optimizely_config.c $(LINK_LOCAL)

test-c: $(RELEASE_DIR)/quickstart $(RELEASE_DIR)/async_start $(RELEASE_DIR)/sigma $(RELEASE_DIR)/concurrent_track \
        $(RELEASE_DIR)/inputs_c $(RELEASE_DIR)/callbacks_c $(RELEASE_DIR)/deadlines_c $(RELEASE_DIR)/fork_events \
        $(RELEASE_DIR)/optimizely_config_c
	rm -rf $(TEST_STATE_HOME)
	$(RELEASE_DIR)/quickstart examples/datafiles/demo.json > /dev/null
	state=$$(mktemp -d) && $(RELEASE_DIR)/async_start examples/datafiles demo $$state > /dev/null && rm -rf $$state
	$(RELEASE_DIR)/sigma examples/datafiles/demo.json > /dev/null
	state=$$(mktemp -d) && $(RELEASE_DIR)/inputs_c $$state > /dev/null && rm -rf $$state
	state=$$(mktemp -d) && $(RELEASE_DIR)/callbacks_c examples/datafiles/demo.json $$state > /dev/null && rm -rf $$state
	state=$$(mktemp -d) && $(RELEASE_DIR)/deadlines_c examples/datafiles/demo.json $$state && rm -rf $$state
	state=$$(mktemp -d) && $(RELEASE_DIR)/optimizely_config_c examples/datafiles/demo.json $$state > /dev/null && rm -rf $$state
	@echo "C examples built with $(CFLAGS_STRICT) and ran"
	$(RELEASE_DIR)/concurrent_track examples/datafiles/demo.json
	state=$$(mktemp -d) && $(RELEASE_DIR)/fork_events examples/datafiles/demo.json $$state && rm -rf $$state

# Real-time segments: examples/c/segments.c (-Werror -pedantic) against a local ODP stand-in server.
test-segments-c: lib
	CC="$(CC)" PYTHON=$(PYTHON) bash tests/odp/test_segments_c.sh $(RELEASE_DIR)

$(RELEASE_DIR)/quickstart-cpp: examples/cpp/quickstart.cpp bindings/cpp/experiment.hpp include/experiment.h lib
	$(CXX) $(CXXFLAGS_STRICT) -o $@ examples/cpp/quickstart.cpp $(LINK_LOCAL)

$(RELEASE_DIR)/sigma-cpp: examples/cpp/sigma.cpp bindings/cpp/experiment.hpp include/experiment.h lib
	$(CXX) $(CXXFLAGS_STRICT) -o $@ examples/cpp/sigma.cpp $(LINK_LOCAL)

# The C++ wrapper's evaluation calls: every value kind, NUL bytes, no exceptions for data (tests/cpp/test_inputs.cpp).
$(RELEASE_DIR)/inputs-cpp: tests/cpp/test_inputs.cpp bindings/cpp/experiment.hpp include/experiment.h lib
	$(CXX) $(CXXFLAGS_STRICT) -o $@ tests/cpp/test_inputs.cpp $(LINK_LOCAL)

# Then: every exp_* function of the header is reached by experiment.hpp and run (gcov) by an example or
# tests/cpp/test_wrapper.cpp; the functions missing are named.
# The wrapper's optimizely_config_json() (tests/cpp/test_optimizely_config.cpp).
$(RELEASE_DIR)/optimizely-config-cpp: tests/cpp/test_optimizely_config.cpp bindings/cpp/experiment.hpp include/experiment.h lib
	$(CXX) $(CXXFLAGS_STRICT) -o $@ tests/cpp/test_optimizely_config.cpp $(LINK_LOCAL)

test-cpp: $(RELEASE_DIR)/quickstart-cpp $(RELEASE_DIR)/sigma-cpp $(RELEASE_DIR)/inputs-cpp $(RELEASE_DIR)/optimizely-config-cpp
	$(RELEASE_DIR)/quickstart-cpp examples/datafiles/demo.json > /dev/null
	$(RELEASE_DIR)/sigma-cpp examples/datafiles/demo.json > /dev/null
	state=$$(mktemp -d) && $(RELEASE_DIR)/inputs-cpp examples/datafiles/demo.json $$state > /dev/null && rm -rf $$state
	state=$$(mktemp -d) && $(RELEASE_DIR)/optimizely-config-cpp examples/datafiles/demo.json $$state > /dev/null && rm -rf $$state
	@echo "C++ example built with $(CXXFLAGS_STRICT) and ran"
	CXX="$(CXX)" $(PYTHON) tests/cpp/check_wrapper.py --lib-dir $(CURDIR)/$(RELEASE_DIR)

# A short libFuzzer round per harness over the C ABI's parsers (regressions replayed first); `make fuzz` runs
# long rounds against a coverage-instrumented build of the library. Run as fuzz/README.md says, without the
# test environment (no EXPERIMENT_EVENT_ENDPOINT=none: the built-in event pipeline and its logging threads
# are live, as for a user); run.sh gives the harnesses a state directory of their own under .build/fuzz.
FUZZ_SECONDS ?= 10
test-fuzz: lib
	env -u EXPERIMENT_EVENT_ENDPOINT -u XDG_STATE_HOME bash fuzz/run.sh $(FUZZ_SECONDS)

test-fuzz-long: lib
	env -u EXPERIMENT_EVENT_ENDPOINT -u XDG_STATE_HOME bash fuzz/run.sh 120

fuzz: lib
	FUZZ_INSTRUMENTED=1 bash fuzz/run.sh 600

# The library built with ThreadSanitizer and with AddressSanitizer, under a multithreaded stress program.
test-sanitize: deps
	bash tests/sanitize/run.sh address thread

test-sanitize-address: deps
	bash tests/sanitize/run.sh address

test-sanitize-thread: deps
	bash tests/sanitize/run.sh thread

test-cli: lib cli
	bash tests/cli/test_cli.sh $(CLI)

# make install into a temporary prefix (and a DESTDIR stage), build the examples with pkg-config and CMake
# against that copy, run them, make uninstall; then pip install the Python package into a fresh venv; then the
# wheel of `make wheel` in a fresh venv with the system's libcurl, SQLite, hiredis and json-c out of reach.
test-install: lib cli wheel
	MAKE="$(MAKE)" CC="$(CC)" CXX="$(CXX)" bash tests/install/test_install.sh
	PYTHON=$(PYTHON) bash tests/install/test_pip.sh
	PYTHON=$(PYTHON) bash tests/install/test_wheel.sh $(DIST_DIR)

# The Python package for other machines (tools/python_dist.sh): in $(DIST_DIR), an sdist that builds the library
# from its own sources where Swift is installed, and the wheel built from that sdist, repaired by auditwheel
# (libcurl, SQLite, hiredis and their dependencies bundled, the lowest manylinux tag the binaries allow).
# The wheel is for the Python that runs it (PYTHON=python3.12 make wheel for another); `make wheel` ships the
# library `make lib` built from the same sources, `make wheel-from-source` lets the sdist's Swift build run.
DIST_DIR        := .build/dist
SOURCE_DIST_DIR := .build/dist-from-source

wheel: lib
	PYTHON=$(PYTHON) EXPERIMENT_LIBRARY=$(CURDIR)/$(LIB) bash tools/python_dist.sh $(DIST_DIR)

wheel-from-source: deps
	env -u EXPERIMENT_LIBRARY PYTHON=$(PYTHON) bash tools/python_dist.sh $(SOURCE_DIST_DIR)

# The sdist on its own: its wheel built by Swift from the sdist's sources (a whole release build: minutes),
# then put through the same checks as the wheel of `make wheel`.
test-sdist: lib wheel-from-source
	PYTHON=$(PYTHON) bash tests/install/test_wheel.sh $(SOURCE_DIST_DIR)

# The documentation tells the truth: every code block of README.md and bindings/*/README* runs as written, as a
# new user runs it: after the README's own install steps (make install into a temporary HOME, a virtual
# environment with pip install ./bindings/python), from a temporary directory outside the repository (see
# tools/check_doc_blocks.py; blocks that cannot run are marked <!-- doc-check: fragment|skip: why -->), no file
# names a machine's absolute path, the Python package passes mypy --strict, and every public Python member has
# a docstring (make docs).
test-docs: test-deps lib cli python-speedups
	$(PYTHON) tools/check_doc_blocks.py
	cd bindings/python && $(PYTHON) -m mypy --strict -p experiment
	$(PYTHON) tools/api_docs.py --strict --out $(DOCS_DIR)

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

# pytest-xdist workers: every test has its own state directory and OS-chosen ports, so they run side by side.
PYTEST_WORKERS ?= 2

# The differential fuzzers against optimizely-sdk over wide seed ranges (the test command replays fixed
# slices of each); each exits 1 on any difference and prints it.
FUZZ_ENV := EXPERIMENT_LIBRARY=$(CURDIR)/$(LIB) PYTHONPATH=$(CURDIR)/bindings/python
test-differential-wide: test-deps lib
	$(FUZZ_ENV) $(PYTHON) bindings/python/tests/difffuzz.py --seeds 0:2000 --jobs 2 --quiet
	$(FUZZ_ENV) $(PYTHON) bindings/python/tests/valuefuzz.py --seeds 0:1500 --jobs 2 --quiet
	$(FUZZ_ENV) $(PYTHON) bindings/python/tests/edgefuzz.py --seeds 0:1500
	$(FUZZ_ENV) $(PYTHON) bindings/python/tests/apifuzz.py --seeds 920000:921500 --jobs 2 --quiet

# The whole suite with the accelerator, then the decide tests once more through the pure ctypes path.
test-python: test-deps lib python-speedups
	EXPERIMENT_LIBRARY=$(CURDIR)/$(LIB) PYTHONPATH=$(CURDIR)/bindings/python \
	  $(PYTHON) -m pytest -q -n $(PYTEST_WORKERS) bindings/python/tests
	EXPERIMENT_NO_SPEEDUPS=1 EXPERIMENT_LIBRARY=$(CURDIR)/$(LIB) PYTHONPATH=$(CURDIR)/bindings/python \
	  $(PYTHON) -m pytest -q bindings/python/tests/test_decide.py bindings/python/tests/test_input_errors.py \
	    bindings/python/tests/test_speedups.py bindings/python/tests/test_user_context.py

# The reference vectors (tests/vectors/README.md): the committed cases are checked against a fresh run of
# optimizely-sdk (generate.py --check), then every binding's runner replays them; each prints
# `N passed, N failed` and exits 1 on a failure (Python drop-in, Python native, C, C++). All runners run even
# when one fails.
VECTORS_RUNNER_C := $(RELEASE_DIR)/run_vectors_c
$(VECTORS_RUNNER_C): tests/vectors/run_c.c include/experiment.h lib
	$(CC) $(CFLAGS_STRICT) -o $@ tests/vectors/run_c.c $(LINK_LOCAL) -ljson-c -lm

VECTORS_RUNNER_CPP := $(RELEASE_DIR)/run_vectors_cpp
$(VECTORS_RUNNER_CPP): tests/vectors/run_cpp.cpp include/experiment.h bindings/cpp/experiment.hpp lib
	$(CXX) $(CXXFLAGS_STRICT) -o $@ tests/vectors/run_cpp.cpp $(LINK_LOCAL) -ljson-c

test-vectors: test-deps lib python-speedups $(VECTORS_RUNNER_C) $(VECTORS_RUNNER_CPP)
	@status=0; \
	echo "== generate.py --check"; $(PYTHON) tests/vectors/generate.py --check || status=1; \
	echo "== python drop-in"; $(FUZZ_ENV) $(PYTHON) tests/vectors/run_python_dropin.py || status=1; \
	echo "== python native"; $(FUZZ_ENV) $(PYTHON) tests/vectors/run_python_native.py || status=1; \
	echo "== c"; $(VECTORS_RUNNER_C) --root $(CURDIR) tests/vectors/cases/*.json || status=1; \
	echo "== c++"; $(VECTORS_RUNNER_CPP) --root $(CURDIR) tests/vectors/cases/*.json || status=1; \
	exit $$status

# Installs like libcurl or libgit2 (PREFIX, DESTDIR and the *DIR variables as in the GNU conventions):
#   lib/libexperiment.so.$(VERSION)   stripped, no RUNPATH; its debug info in lib/.debug/ (found by gdb through
#                                     the library's .gnu_debuglink), SONAME links .so.$(MAJOR) and .so
#   include/experiment.h, include/experiment.hpp
#   lib/pkgconfig/experiment.pc       ${prefix}-relative
#   lib/cmake/experiment/             find_package(experiment CONFIG) -> experiment::experiment (relocatable)
#   bin/experiment-cli                stripped
#   share/libexperiment/demo.json     the demo datafile the README's quick starts use (pkg-config's pkgdatadir)
#   share/doc/libexperiment/          LICENSE, NOTICE, CHANGELOG.md, README.md, the API reference (make docs)
# `make uninstall` with the same variables removes exactly these files.
BINDIR      ?= $(PREFIX)/bin
DATAROOTDIR ?= $(PREFIX)/share
DOCDIR      ?= $(DATAROOTDIR)/doc/libexperiment
PKGDATADIR  ?= $(DATAROOTDIR)/libexperiment
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
CMAKEDIR    ?= $(LIBDIR)/cmake/experiment
DEBUGDIR    := $(LIBDIR)/.debug
MINOR       := $(word 2,$(subst ., ,$(VERSION)))
DOCS_DIR    := .build/docs
DOC_FILES   := LICENSE NOTICE CHANGELOG.md README.md
API_DOCS    := api-c.md api-python.md
INSTALLED_FILES := $(LIBDIR)/libexperiment.so.$(VERSION) $(LIBDIR)/libexperiment.so.$(MAJOR) $(LIBDIR)/libexperiment.so \
	$(DEBUGDIR)/libexperiment.so.$(VERSION).debug $(INCLUDEDIR)/experiment.h $(INCLUDEDIR)/experiment.hpp \
	$(PKGCONFIGDIR)/experiment.pc $(CMAKEDIR)/experimentConfig.cmake $(CMAKEDIR)/experimentConfigVersion.cmake \
	$(BINDIR)/experiment-cli $(addprefix $(DOCDIR)/,$(DOC_FILES) $(API_DOCS)) $(PKGDATADIR)/demo.json
INSTALLED_DIRS := $(DEBUGDIR) $(CMAKEDIR) $(DOCDIR) $(PKGDATADIR)

# A path under $(PREFIX) as ${prefix}/..., any other path as it is (pkg-config).
prefixed = $(if $(filter $(PREFIX)/%,$(1)),$${prefix}/$(patsubst $(PREFIX)/%,%,$(1)),$(1))

# The API reference in Markdown, from include/experiment.h and the Python package's docstrings.
docs:
	$(PYTHON) tools/api_docs.py --out $(DOCS_DIR)

install: lib cli docs
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(DEBUGDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) \
	  $(DESTDIR)$(CMAKEDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(DOCDIR) $(DESTDIR)$(PKGDATADIR)
	@# Debug info apart, then a stripped copy that points at it; the build's RUNPATH ($$ORIGIN) is not kept.
	objcopy --only-keep-debug $(LIB) $(DESTDIR)$(DEBUGDIR)/libexperiment.so.$(VERSION).debug
	chmod 0644 $(DESTDIR)$(DEBUGDIR)/libexperiment.so.$(VERSION).debug
	objcopy --strip-unneeded --remove-section=.comment \
	  --add-gnu-debuglink=$(DESTDIR)$(DEBUGDIR)/libexperiment.so.$(VERSION).debug \
	  $(LIB) $(DESTDIR)$(LIBDIR)/libexperiment.so.$(VERSION)
	chmod 0755 $(DESTDIR)$(LIBDIR)/libexperiment.so.$(VERSION)
	@if readelf -d $(DESTDIR)$(LIBDIR)/libexperiment.so.$(VERSION) | grep -q 'RPATH\|RUNPATH'; then \
	  echo "the library carries a RUNPATH (build it with make lib)"; exit 1; fi
	ln -sf libexperiment.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libexperiment.so.$(MAJOR)
	ln -sf libexperiment.so.$(MAJOR) $(DESTDIR)$(LIBDIR)/libexperiment.so
	install -m 0644 include/experiment.h bindings/cpp/experiment.hpp $(DESTDIR)$(INCLUDEDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR_PC@|$(call prefixed,$(LIBDIR))|; s|@INCLUDEDIR_PC@|$(call prefixed,$(INCLUDEDIR))|' \
	  -e 's|@PKGDATADIR_PC@|$(call prefixed,$(PKGDATADIR))|; s|@VERSION@|$(VERSION)|' experiment.pc.in \
	  > $(DESTDIR)$(PKGCONFIGDIR)/experiment.pc
	@# The CMake package finds the prefix from its own place: ../.. per level of CMAKEDIR below PREFIX.
	@up=$$(echo "$(patsubst $(PREFIX)/%,%,$(CMAKEDIR))" | awk -F/ '{ for (i = 1; i <= NF; i++) printf "%s..", (i > 1 ? "/" : "") }'); \
	  rel() { case "$$1" in $(PREFIX)/*) echo "\$${_experiment_prefix}/$${1#$(PREFIX)/}";; *) echo "$$1";; esac; }; \
	  for f in experimentConfig experimentConfigVersion; do \
	    sed -e "s|@CMAKE_TO_PREFIX@|$$up|; s|@LIBDIR_FROM_PREFIX@|$$(rel $(LIBDIR))|g; s|@INCLUDEDIR_FROM_PREFIX@|$$(rel $(INCLUDEDIR))|g" \
	        -e "s|@PKGDATADIR_FROM_PREFIX@|$$(rel $(PKGDATADIR))|g" \
	        -e 's|@VERSION@|$(VERSION)|g; s|@MAJOR@|$(MAJOR)|g; s|@MINOR@|$(MINOR)|g' \
	        cmake/$$f.cmake.in > $(DESTDIR)$(CMAKEDIR)/$$f.cmake || exit 1; \
	  done
	install -m 0755 -s $(CLI) $(DESTDIR)$(BINDIR)/experiment-cli
	install -m 0644 $(DOC_FILES) $(addprefix $(DOCS_DIR)/,$(API_DOCS)) $(DESTDIR)$(DOCDIR)/
	install -m 0644 examples/datafiles/demo.json $(DESTDIR)$(PKGDATADIR)/demo.json
	@echo "installed libexperiment $(VERSION) under $(DESTDIR)$(PREFIX)"

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED_FILES))
	@# Only the directories that are libexperiment's own, and only when nothing else is in them.
	@for dir in $(addprefix $(DESTDIR),$(INSTALLED_DIRS)); do \
	  if [ -d "$$dir" ]; then rmdir --ignore-fail-on-non-empty "$$dir"; fi; \
	done
	@echo "removed libexperiment $(VERSION) from $(DESTDIR)$(PREFIX)"

# benchmarks/run.sh installs what it compares with (the reference SDK; eppo-server-sdk, a native-core Python SDK,
# for scale when it installs).
bench: lib python-speedups
	bash benchmarks/run.sh

# Every build product: the Swift builds (release, debug, sanitizer, fuzz scratch paths), the Python
# accelerator, pip's and setuptools' leftovers, and the caches of pytest and mypy.
clean:
	rm -rf .build .build-* .build_* out bindings/python/build bindings/python/dist
	rm -f bindings/python/experiment/_speedups*.so
	find . -path ./.git -prune -o \( -name __pycache__ -o -name '*.egg-info' -o -name .pytest_cache \
	  -o -name .mypy_cache \) -type d -prune -exec rm -rf {} +
