# The two commands a newcomer needs: `make dev` and `make test`. See README.md.
.PHONY: dev test tools build lint unit e2e bench clean

# Installs whatever is missing (idempotent), builds, serves on 127.0.0.1:8787, seeds the demo tenant.
dev: tools build
	./scripts/dev.sh

# Every test: formatting, lints (host and wasm32), host tests, the wasm32 build, end-to-end.
test: tools lint unit build e2e

tools:
	./scripts/install-tools.sh

build:
	./scripts/build-worker.sh

lint:
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --all-targets --features bm25-baseline -- -D warnings
	cargo clippy --lib --target wasm32-unknown-unknown -- -D warnings

unit:
	cargo test

e2e:
	./scripts/e2e.sh

clean:
	rm -rf build target .floorgate
