# Packages of memlens (doc/containers.md, debian/):
#
#   make image   an OCI image, localhost/memlens:$(VERSION), of memlens,
#                memlens-agent and the patched CRIU on Debian's essential
#                set plus their runtime libraries (scripts/image.sh; root,
#                podman; no registry is contacted)
#   make deb     the memlens and memlens-agent .deb packages, built with
#                dpkg-buildpackage from a copy of the tree, into $(BUILD)/deb
#                (scripts/deb.sh), and lintian's verdict on them
#
# Each installs its opt-in package list (scripts/packages/optional/) first.

.PHONY: image deb
image: DEPS_OPT := image
image: deps
	@BUILD=$(BUILD) VERSION=$(VERSION) scripts/image.sh

deb: DEPS_OPT := deb
deb: deps
	@BUILD=$(BUILD) VERSION=$(VERSION) scripts/deb.sh
