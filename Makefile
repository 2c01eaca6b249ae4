# Two entry points (README): `make run` sets up, builds and tunes a GEMM; `make test` sets up,
# builds and runs every test, then the sanitizer pass (scripts/sanitize_tests.sh: ASan+UBSan
# build in build-asan, the cheap unit tests, the fuzz targets) and the install check
# (scripts/install_check.sh: the example built against the installed package). Everything else
# here serves those two.
BUILD ?= build
JOBS ?= $(shell nproc)
# Empty: tuner picks cuda:0 when a GPU is present, else sim:h100-sxm.
DEVICE ?=
SHAPE ?= M=1000,N=1000,K=1000
TRIALS ?= 128
DB ?= tuning.db

PREFIX ?= /usr/local
# Debug information of the RelWithDebInfo build: line tables only (backtraces, perf and gdb's line
# numbers work), a fifth of full -g's object size and faster to build and link on the 2-core CI
# machine. `make build DEBUG_INFO=-g` for full debug information.
DEBUG_INFO ?= -g1

.PHONY: setup build run test sanitize install install-check bench clean

setup:
	bash scripts/setup.sh

build: setup
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTUNER_BUILD_TESTS=ON \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 $(DEBUG_INFO) -DNDEBUG"
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/bin/tuner devices
	$(BUILD)/bin/tuner tune --op gemm --shape $(SHAPE) $(if $(DEVICE),--device $(DEVICE)) --trials $(TRIALS) --strategy xgb --seed 1 --db $(DB)
	$(BUILD)/bin/tuner query --db $(DB) --op gemm --shape $(SHAPE) $(if $(DEVICE),--device $(DEVICE)) --best

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	BUILD=$(BUILD) JOBS=$(JOBS) bash scripts/install_check.sh
	JOBS=$(JOBS) bash scripts/sanitize_tests.sh

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

install-check: build
	BUILD=$(BUILD) JOBS=$(JOBS) bash scripts/install_check.sh

sanitize: setup
	JOBS=$(JOBS) bash scripts/sanitize_tests.sh

bench: build
	$(BUILD)/bin/pipeline_bench
	$(BUILD)/bin/search_bench
	$(BUILD)/bin/search_efficiency_bench
	$(BUILD)/bin/sim_vs_replay_bench
	$(BUILD)/bin/runtime_lookup_bench
	$(BUILD)/bin/plan_bench

clean:
	rm -rf $(BUILD) build-asan
