# benchfleet's Debian packages, built by CPack from the install rules below, one package
# per install component (docs/deploy-packages.md):
#
#   benchfleet-controller  (controller)  /usr/bin/benchd, /lib/systemd/system/benchd.service,
#                          /etc/default/benchd (a conffile), the Grafana dashboard and
#                          provisioning and the Prometheus configs in /usr/share/benchfleet/
#   benchfleet-agent       (agent)       /usr/bin/bench-agent and /usr/bin/bench-train (the
#                          agent runs the trainer beside it), bench-agent.service,
#                          /etc/default/bench-agent (a conffile)
#   benchfleet-cli         (cli)         /usr/bin/benchctl
#
#   cmake --build build --target package     (or: cd build && cpack)
#
# Binaries are stripped; each package's Depends: is computed by dpkg-shlibdeps (dpkg-dev
# and file, from deploy/install-deps.sh); the maintainer scripts, shared by the two
# service packages, come from deploy/debian/*.in.
#   -DBENCH_PACKAGE_MAINTAINER="Name <mail>"   the Maintainer: field
set(BENCH_PACKAGE_MAINTAINER "benchfleet maintainers <benchfleet@example.org>" CACHE STRING
  "Maintainer: field of the Debian packages")

if(NOT TARGET bench-train)
  message(STATUS "No Debian packages: benchfleet-agent carries bench-train, which is not built")
  return()
endif()

set(BENCH_UNIT_DIR /lib/systemd/system)  # Debian 12's systemd unit directory
set(BENCH_SHARE_DIR share/benchfleet)    # under /usr

install(TARGETS benchd RUNTIME DESTINATION bin COMPONENT controller)
install(FILES deploy/systemd/benchd.service DESTINATION ${BENCH_UNIT_DIR} COMPONENT controller)
install(FILES deploy/systemd/benchd.default DESTINATION /etc/default RENAME benchd
  COMPONENT controller)
install(DIRECTORY deploy/grafana/dashboards deploy/grafana/provisioning
  DESTINATION ${BENCH_SHARE_DIR}/grafana COMPONENT controller)
install(FILES deploy/prometheus/prometheus.yml deploy/prometheus/prometheus-local.yml
  deploy/prometheus/prometheus-secure.yml
  DESTINATION ${BENCH_SHARE_DIR}/prometheus COMPONENT controller)
install(FILES docs/security.md docs/deploy-systemd.md docs/observability.md
  DESTINATION share/doc/benchfleet-controller COMPONENT controller)

install(TARGETS bench-agent bench-train RUNTIME DESTINATION bin COMPONENT agent)
install(FILES deploy/systemd/bench-agent.service DESTINATION ${BENCH_UNIT_DIR} COMPONENT agent)
install(FILES deploy/systemd/bench-agent.default DESTINATION /etc/default RENAME bench-agent
  COMPONENT agent)
install(FILES docs/agent.md docs/security.md docs/deploy-systemd.md docs/trainer-events.md
  DESTINATION share/doc/benchfleet-agent COMPONENT agent)

install(TARGETS benchctl RUNTIME DESTINATION bin COMPONENT cli)

# postinst, prerm, postrm (the unit's daemon-reload, restart on upgrade, stop on removal)
# and conffiles for a service package, in BINARY_DIR/debian/COMPONENT/; sets
# CPACK_DEBIAN_<COMPONENT>_PACKAGE_CONTROL_EXTRA to them.
function(bench_service_package_scripts component package unit default_file)
  set(dir ${CMAKE_BINARY_DIR}/debian/${component})
  set(BENCH_PACKAGE ${package})
  set(BENCH_UNIT ${unit})
  set(BENCH_DEFAULT ${default_file})
  foreach(script postinst prerm postrm)
    configure_file(${PROJECT_SOURCE_DIR}/deploy/debian/${script}.in ${dir}/${script} @ONLY)
  endforeach()
  file(WRITE ${dir}/conffiles "/etc/default/${default_file}\n")
  string(TOUPPER ${component} upper)
  set(CPACK_DEBIAN_${upper}_PACKAGE_CONTROL_EXTRA
    ${dir}/postinst ${dir}/prerm ${dir}/postrm ${dir}/conffiles PARENT_SCOPE)
endfunction()
bench_service_package_scripts(controller benchfleet-controller benchd.service benchd)
bench_service_package_scripts(agent benchfleet-agent bench-agent.service bench-agent)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME benchfleet)
set(CPACK_PACKAGE_VENDOR benchfleet)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL controller agent cli)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # benchfleet-agent_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${BENCH_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION misc)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)  # scripts 0755, conffiles 0644

set(CPACK_DEBIAN_CONTROLLER_PACKAGE_NAME benchfleet-controller)
# Descriptions: a synopsis line, then the long description in lines of at most 79
# columns (Debian policy 3.4.1; debs_test.sh checks the width).
set(CPACK_DEBIAN_CONTROLLER_DESCRIPTION
  "benchfleet controller (benchd): training benchmarks across GPU nodes
benchd places benchmark jobs on the fleet's agents, stores every iteration
and GPU reading in SQLite, and serves the gRPC API, a web page, a JSON API
and Prometheus metrics. Ships benchd.service (disabled until enabled),
/etc/default/benchd, and the Grafana dashboard and Prometheus
configurations in /usr/share/benchfleet/.")
set(CPACK_DEBIAN_CONTROLLER_PACKAGE_SUGGESTS "prometheus, benchfleet-cli")

set(CPACK_DEBIAN_AGENT_PACKAGE_NAME benchfleet-agent)
set(CPACK_DEBIAN_AGENT_DESCRIPTION
  "benchfleet node agent (bench-agent) and trainer (bench-train)
bench-agent registers a node's GPUs (through NVML, loaded at run time) or
CPU slots with benchd and runs one bench-train process per rank, streaming
iteration times and GPU power, clocks and temperatures back. bench-train is
the libtorch training core, also usable alone. Ships bench-agent.service
(disabled until enabled) and /etc/default/bench-agent.")
# Debian's libtorch calls the system BLAS; the reference BLAS is ~3.5x slower on some
# layers (deploy/install-deps.sh).
set(CPACK_DEBIAN_AGENT_PACKAGE_RECOMMENDS libopenblas0-pthread)

set(CPACK_DEBIAN_CLI_PACKAGE_NAME benchfleet-cli)
set(CPACK_DEBIAN_CLI_DESCRIPTION
  "benchfleet command line (benchctl)
benchctl submits and sweeps benchmark jobs, follows them, and prints
results grids, comparisons, per-GPU variability and logs from a benchfleet
controller.")

# `package_source`: a tarball of the tree without what .gitignore leaves out (build trees,
# node_modules) or .git; a build from it says "unknown" unless -DBENCH_BUILD_ID= is given.
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/\\.git/" "/build[^/]*/" "/node_modules/" "/\\.run/" "/\\.gl/"
  "/\\.whl/" "/dist/" "/\\.gpu-bundle/")

include(CPack)
