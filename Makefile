# agentbox: one Makefile.  `make`, `make check`, `make asan`, `make demo`,
# `make install` and `make uninstall` (PREFIX, DESTDIR), `make lint`,
# `make property`.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share/agentbox
MANDIR ?= $(PREFIX)/share/man

CC ?= cc
CFLAGS ?= -O2 -g
# Debian packages; `make` installs the missing ones as root and otherwise
# prints the apt-get command to run.  README.md lists these very words
# (tests/readme.bats checks).  To compile the programs:
BUILD_PACKAGES = gcc make pkg-config libcurl4-openssl-dev libjsmn-dev \
	libgit2-dev zlib1g-dev libssl-dev
# What the programs and the demos use on the host: the default image's
# files (busybox, git, the CA bundle), pip for the agents image's wheels,
# python3 and openssl for the demos, mmdebstrap for ab-image build
# --packages.
RUN_PACKAGES = git busybox-static ca-certificates python3 python3-pip openssl \
	mmdebstrap
# The tests alone (make check, asan, lint, fuzz, gate): the harness, the
# fuzzers' compiler, the tests' own engines, sshd, vendor and gVisor.
TEST_PACKAGES = time bats bats-support bats-assert shellcheck groff-base \
	clang libclang-rt-dev llvm strace curl ansible-core parallel iproute2 \
	iptables openssh-client openssh-server runsc

TOOLS = ab-image ab-alloc ab-seed ab-clean ab-profile ab-validate ab-run ab-export
# Programs that run only inside containers, put into images by the
# manifest's "tool" directive: linked statically with libc alone, never
# sanitized (the image carries no sanitizer runtime), so they run on any
# base image whatever its libc (ab-image build --base).
IMAGE_PROGS = ab-proxy ab-relay ab-codex ab-privs
# What each of them links of lib/, and of other libraries (static
# archives: OpenSSL's, and what libcrypto.a itself needs).
IMAGE_LIB_ab-proxy = egress tally tlsca intercept oauth jwt httpmsg secret vault hash json buf tool err
IMAGE_LDLIBS_ab-proxy = $(shell pkg-config --static --libs libssl 2>/dev/null)
IMAGE_LIB_ab-relay = egress tool err
IMAGE_LIB_ab-codex = appserver lines json buf pathcheck tool err
IMAGE_LIB_ab-privs =
# lib/ is grouped by subsystem (lib/README): a module is named by its
# file's stem wherever it sits, and every folder is on the include path.
LIB_SRC = $(sort $(wildcard lib/*.c lib/*/*.c))
LIB_H = $(wildcard lib/*.h lib/*/*.h)
LIB_DIRS = $(sort $(dir $(wildcard lib/*/*.h)))
lib_c = $(foreach m,$(1),$(firstword $(wildcard lib/$(m).c lib/*/$(m).c)))
# lib/'s folders from the bottom up: each may include only its own
# headers and those of the folders before it (make lint checks).
LIB_LAYERS = base format git engine box image egress agent step
UNIT_TESTS = agent-test appserver-test egress-test err-test gitstream-test httpmsg-test json-test lines-test lockcheck-test pathcheck-test \
	progress-test run-test runtime-test schema-test secret-test \
	gitpack-test intercept-test oauth-test signin-test tally-test tlsca-test \
	zip-test buf-test
# What a unit test links besides libagentbox.a and PKG_LIBS.
UNIT_LDLIBS_tlsca-test = -lssl
UNIT_LDLIBS_intercept-test = -lssl
# libFuzzer harnesses of the parsers of untrusted bytes (tests/fuzz), each
# with the lib sources it needs; `make fuzz` runs each FUZZ_SECONDS.
FUZZERS = egress schema zip tarread json agent pathcheck appserver progress \
	listing roottar secret httpmsg oauth
FUZZ_LIB_egress = egress err
FUZZ_LIB_httpmsg = httpmsg
FUZZ_LIB_schema = schema json buf err
FUZZ_LIB_zip = zip buf err
# The tar reader is fed its bytes (archive.c feeds it the engine's): it
# fuzzes alone.
FUZZ_LIB_tarread = tarread buf err
# roottar's layer comes from rootfs.c (its tar source), which links its
# inputs' readers.
FUZZ_LIB_roottar = roottar rootfs tarstream elfdeps file hash hashcache \
	wheel zip git pathcheck testhook deadline buf err
FUZZ_LDLIBS_roottar = -lgit2 -lcrypto
FUZZ_LIB_json = json buf err
FUZZ_LIB_agent = agent lines progress schema json buf err
FUZZ_LIB_pathcheck = pathcheck err
FUZZ_LIB_progress = progress buf err
FUZZ_LIB_listing = listing err
FUZZ_LIB_secret = secret err
FUZZ_LIB_oauth = oauth jwt secret vault egress hash json buf err
FUZZ_LDLIBS_oauth = -lcrypto
FUZZ_LIB_appserver = appserver lines json buf pathcheck err
FUZZ_CC = clang
FUZZ_SECONDS ?= 60

BUILD ?= build
BIN ?= bin
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
PKG_CFLAGS = $(shell pkg-config --cflags libcurl libgit2 libcrypto zlib 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs libcurl libgit2 libcrypto zlib 2>/dev/null) -pthread
AB_CFLAGS = -std=c17 -Wall -Wextra -Werror -D_GNU_SOURCE -pthread -Ilib \
	$(LIB_DIRS:%=-I%) -DAB_MULTIARCH='"$(MULTIARCH)"' \
	$(PKG_CFLAGS)

.SECONDEXPANSION:
LIB_OBJ = $(LIB_SRC:lib/%.c=$(BUILD)/lib/%.o)
TOOL_BIN = $(TOOLS:%=$(BIN)/%)
IMAGE_BIN = $(IMAGE_PROGS:%=$(BIN)/%)
IMAGE_CFLAGS = -O2 -g
UNIT_BIN = $(UNIT_TESTS:%=$(BUILD)/tests/%)
FUZZ_BIN = $(FUZZERS:%=$(BUILD)/fuzz/%)
# An image program's lib objects, built apart (IMAGE_CFLAGS); a function,
# since a % in the rule's own prerequisites would be its stem.
image_obj = $(patsubst lib/%.c,$(BUILD)/image/lib/%.o,$(call lib_c,$(1)))

.PHONY: all deps test-deps tools test-programs check asan demo demo-agents \
	bench bench-secret gate property fuzz fuzz-report print-fuzz-lib print-fuzz-ldlibs \
	print-var install uninstall lint analyze clean

# The programs alone: what the demos and an install need.
all: deps
	@$(MAKE) --no-print-directory tools

deps:
	@sh sh/ensure-deps $(BUILD_PACKAGES) $(RUN_PACKAGES)

test-deps: deps
	@sh sh/ensure-deps $(TEST_PACKAGES)

tools: $(TOOL_BIN) $(IMAGE_BIN)

# What the suite runs besides the programs: unit tests and fuzz harnesses.
test-programs: test-deps
	@$(MAKE) --no-print-directory tools $(UNIT_BIN) $(FUZZ_BIN)

$(BUILD)/lib/%.o: lib/%.c $(LIB_H)
	@mkdir -p $(@D)
	$(CC) $(AB_CFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/cmd/%.o: cmd/%.c $(LIB_H)
	@mkdir -p $(@D)
	$(CC) $(AB_CFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/libagentbox.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $(LIB_OBJ)

$(BUILD)/image/%.o: cmd/%.c $(LIB_H)
	@mkdir -p $(@D)
	$(CC) $(AB_CFLAGS) $(IMAGE_CFLAGS) -c -o $@ $<

$(BUILD)/image/lib/%.o: lib/%.c $(LIB_H)
	@mkdir -p $(@D)
	$(CC) $(AB_CFLAGS) $(IMAGE_CFLAGS) -c -o $@ $<

$(IMAGE_BIN): $(BIN)/%: $(BUILD)/image/%.o \
		$$(call image_obj,$$(IMAGE_LIB_$$*))
	@mkdir -p $(@D)
	$(CC) $(IMAGE_CFLAGS) -static -o $@ $^ $(IMAGE_LDLIBS_$*) -pthread

$(BIN)/%: $(BUILD)/cmd/%.o $(BUILD)/libagentbox.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libagentbox.a $(PKG_LIBS)

$(BUILD)/tests/%: tests/unit/%.c tests/unit/tap.h $(BUILD)/libagentbox.a
	@mkdir -p $(@D)
	$(CC) $(AB_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libagentbox.a \
		$(UNIT_LDLIBS_$*) $(PKG_LIBS)

$(FUZZ_BIN): $(BUILD)/fuzz/%: tests/fuzz/%.c $$(call lib_c,$$(FUZZ_LIB_$$*)) \
		$(LIB_H) tests/fuzz/common.h
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=c17 -D_GNU_SOURCE -Ilib $(LIB_DIRS:%=-I%) -g -O1 \
		-fsanitize=fuzzer,address,undefined -o $@ $< \
		$(call lib_c,$(FUZZ_LIB_$*)) \
		$(FUZZ_LDLIBS_$*) -lz

# Each harness for FUZZ_SECONDS from its committed corpus; what it finds
# new goes to $(BUILD)/fuzz/new-NAME, a crash to $(BUILD)/fuzz/crash-*.
fuzz: test-programs
	@for f in $(FUZZERS); do \
		mkdir -p $(BUILD)/fuzz/new-$$f || exit 1; \
		$(BUILD)/fuzz/$$f -max_total_time=$(FUZZ_SECONDS) \
			-artifact_prefix=$(BUILD)/fuzz/ $(BUILD)/fuzz/new-$$f \
			tests/fuzz/corpus/$$f || exit 1; \
	done

# The combined gate (tests/gate/gate.py): GATE_ARGS as it takes them;
# by default three random trials per kind, alone and four at a time.
# make check runs it reduced (tests/gate.bats).
GATE_ARGS ?= --trials 3
gate: test-programs
	@AB_BIN=$(CURDIR)/$(BIN) python3 tests/gate/gate.py $(GATE_ARGS)

# ab-export's property test (tests/lib/export-prop.py) on PROPERTY_TREES
# drawn trees from seed PROPERTY_START on (make check runs 53 and the
# fixed cases, tests/export-property.bats); each failure is printed with
# the command that replays it.
PROPERTY_TREES ?= 2000
PROPERTY_START ?= 1000
property: test-deps all
	@AB_BIN=$(CURDIR)/$(BIN) python3 tests/lib/export-prop.py \
		--long $(PROPERTY_TREES) --start $(PROPERTY_START)

# Executions and line coverage (llvm-cov) of each harness in
# FUZZ_SECONDS, for bench/RESULTS.md.
fuzz-report:
	@BUILD=$(BUILD) sh tests/fuzz/report.sh $(FUZZ_SECONDS) $(FUZZERS)

print-fuzz-lib:
	@echo $(call lib_c,$(FUZZ_LIB_$(NAME)))

print-fuzz-ldlibs:
	@echo $(FUZZ_LDLIBS_$(NAME))

# A variable's words, for the tests that check a list against it
# (`make -s print-var NAME=TOOLS`).
print-var:
	@echo $($(NAME))

# The suite runs against the real engine; AB_BIN says which build it tests.
check: test-programs
	@AB_BIN=$(CURDIR)/$(BIN) AB_UNIT=$(CURDIR)/$(BUILD)/tests \
		AB_FUZZ=$(CURDIR)/$(BUILD)/fuzz sh tests/run-suite

# The same suite with every tool built with ASan and UBSan.
ASAN_FLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=all
asan: test-deps
	@$(MAKE) --no-print-directory test-programs BUILD=build-asan BIN=bin-asan \
		CFLAGS="$(ASAN_FLAGS)" LDFLAGS="-fsanitize=address,undefined"
	@AB_BIN=$(CURDIR)/bin-asan AB_UNIT=$(CURDIR)/build-asan/tests \
		AB_FUZZ=$(CURDIR)/build-asan/fuzz \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=99 \
		sh tests/run-suite

# What the build prints goes to stderr: stdout is the result record alone.
demo:
	@$(MAKE) --no-print-directory all >&2
	@sh sh/demo

# The real Claude Code against the tests' scripted vendor: no account.
demo-agents:
	@$(MAKE) --no-print-directory all >&2
	@sh sh/demo-agents

# Benchmarks (bench/RESULTS.md); gnuplot draws the charts, valgrind and
# perf are there for profiling.
BENCH_PACKAGES = gnuplot-nox valgrind linux-perf strace
bench: all
	@sh sh/ensure-deps $(BENCH_PACKAGES)
	@sh bench/all.sh

# The proxy's credential substitution on one core (bench/secret.c):
# MiB/s, no engine needed.
bench-secret:
	@mkdir -p $(BUILD)/bench
	$(CC) $(AB_CFLAGS) -O2 -o $(BUILD)/bench/secret bench/secret.c \
		$(call lib_c,secret err)
	@$(BUILD)/bench/secret

# Unsafe string functions have no place here (curl's CHECKSRC idea); a
# man page groff warns about (a synopsis line it cannot break) neither;
# nor a report of gcc's static analyzer (make analyze).
lint: test-deps
	@$(MAKE) --no-print-directory analyze
	@sh tests/lib/layers.sh $(LIB_LAYERS)
	@! grep -nE '\b(sprintf|vsprintf|strcpy|strcat|gets|strtok|atoi)\(' \
		$(LIB_SRC) cmd/*.c || { echo "lint: banned function" >&2; exit 1; }
	@# A cut text is never used unseen: ab_fmt (err.h) says so.  Raw
	@# calls only inside it (err.c) and ab_buf_addf's measure and fill.
	@! grep -nE '\bv?snprintf\(' $(LIB_SRC) cmd/*.c | \
		grep -v '^lib/\(base/\)\?err\.c:' | grep -vE \
		'^lib/(base/)?buf\.c:[0-9]+:.*vsnprintf\((NULL, 0|b->data \+ b->len),' || \
		{ echo "lint: snprintf: use ab_fmt (err.h)" >&2; exit 1; }
	@! grep -nE 'ab_buf_init\([^,]*, *0\)' $(LIB_SRC) cmd/*.c tests/unit/*.c \
		tests/fuzz/*.c || { echo "lint: a buffer without a bound" \
		"(lib/base/buf.h)" >&2; exit 1; }
	@shellcheck sh/* image/*.sh bench/*.sh tests/*.bash tests/lib/*.bash \
		tests/lib/*.sh \
		tests/run-suite .ci/run
	@shellcheck -s bash tests/*.bats tests/shared/*.bats
	@! for f in man/*.1 man/*.7; do \
		groff -mandoc -Tutf8 -ww -z "$$f" 2>&1; done | \
		grep . || { echo "lint: groff warns on a man page" >&2; exit 1; }
	@echo "lint: clean"

# gcc -fanalyzer over lib/, a file at a time (each takes seconds): every
# report, as tests/lib/analyzer.awk writes it, must be one of the false
# positives tests/lib/analyzer-known names, and every one named there
# must still be reported.  Its flags are fixed, whatever CFLAGS: what
# the analyzer finds depends on them.
ANALYZER_CC = gcc
ANALYZER_OUT = $(LIB_SRC:lib/%.c=$(BUILD)/analyzer/%.txt)

$(BUILD)/analyzer/%.txt: lib/%.c $(LIB_H) tests/lib/analyzer.awk
	@mkdir -p $(@D)
	@LC_ALL=C $(ANALYZER_CC) $(filter-out -Werror,$(AB_CFLAGS)) -fanalyzer \
		-fdiagnostics-plain-output -c -o /dev/null $< 2>$@.log || \
		{ cat $@.log >&2; exit 1; }
	@awk -f tests/lib/analyzer.awk $@.log >$@.tmp && mv $@.tmp $@

analyze: $(ANALYZER_OUT)
	@sed '/^#/d;/^$$/d' tests/lib/analyzer-known | sort >$(BUILD)/analyzer/known
	@cat $(ANALYZER_OUT) | sort | diff -u $(BUILD)/analyzer/known - >&2 || \
		{ echo "lint: gcc -fanalyzer: reports differ from" \
		"tests/lib/analyzer-known (+ new, - gone); see" \
		"$(BUILD)/analyzer/*.txt.log" >&2; exit 1; }

# The recipe's files install puts in DATADIR/image, and uninstall removes:
# one list, so that the two cannot drift.
IMAGE_DATA = default.manifest passwd group nsswitch.conf agents.manifest \
	agents.lock agents.layer default.layer
IMAGE_SCRIPTS = probe.sh versions.sh demo-agent.sh claude.sh bash.sh

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR)/image \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7
	install -m 0755 $(TOOL_BIN) $(DESTDIR)$(BINDIR)/
	install -d $(DESTDIR)$(PREFIX)/lib/agentbox
	install -m 0755 $(IMAGE_BIN) $(DESTDIR)$(PREFIX)/lib/agentbox/
	install -m 0755 sh/run-task $(DESTDIR)$(BINDIR)/ab-run-task
	install -m 0644 $(IMAGE_DATA:%=image/%) $(DESTDIR)$(DATADIR)/image/
	install -m 0755 $(IMAGE_SCRIPTS:%=image/%) $(DESTDIR)$(DATADIR)/image/
	install -m 0644 man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 man/*.7 $(DESTDIR)$(MANDIR)/man7/

# What install put there, and nothing else; the state directories and
# their engine objects are ab-clean's (README.md, "Removing everything").
uninstall:
	rm -f $(TOOLS:%=$(DESTDIR)$(BINDIR)/%) $(DESTDIR)$(BINDIR)/ab-run-task
	rm -f $(IMAGE_PROGS:%=$(DESTDIR)$(PREFIX)/lib/agentbox/%)
	rm -f $(addprefix $(DESTDIR)$(DATADIR)/image/,$(IMAGE_DATA) \
		$(IMAGE_SCRIPTS))
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(wildcard man/*.1)))
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man7/,$(notdir $(wildcard man/*.7)))
	-rmdir $(DESTDIR)$(PREFIX)/lib/agentbox $(DESTDIR)$(DATADIR)/image \
		$(DESTDIR)$(DATADIR) 2>/dev/null

clean:
	rm -rf build build-asan bin bin-asan
