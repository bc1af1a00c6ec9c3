# Slurm 22.05 for the integration tests (docs/architecture.md, Real services in tests):
# scripts/services/slurm.sh starts the whole stack before the first Slurm* test (fixture "slurm")
# and stops every daemon by PID after the last. The tests share one cluster, so they never run at
# the same time (RESOURCE_LOCK). They find it through ARBITER_CI_DIR (default /tmp/arbiter-ci), as
# slurm.sh does: SLURM_CONF is $ARBITER_CI_DIR/slurm/etc/slurm.conf (ARBITER_SLURM_CONF overrides
# it). Label "slurm": scripts/test.sh runs them apart (`ctest -LE slurm` for the rest), in the
# background.
add_test(NAME service.slurm.start COMMAND ${CMAKE_SOURCE_DIR}/scripts/services/slurm.sh start)
set_tests_properties(service.slurm.start PROPERTIES FIXTURES_SETUP slurm TIMEOUT 240 RESOURCE_LOCK slurm LABELS slurm)
add_test(NAME service.slurm.stop COMMAND ${CMAKE_SOURCE_DIR}/scripts/services/slurm.sh stop)
set_tests_properties(service.slurm.stop PROPERTIES FIXTURES_CLEANUP slurm TIMEOUT 120 RESOURCE_LOCK slurm LABELS slurm)
gtest_discover_tests(test_integration TEST_FILTER "Slurm*" DISCOVERY_TIMEOUT 60
                     PROPERTIES FIXTURES_REQUIRED slurm RESOURCE_LOCK slurm TIMEOUT 600 LABELS slurm)
