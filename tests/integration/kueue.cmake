# Kueue beside Arbiter on the Kubernetes test cluster (scripts/services/kueue.sh;
# docs/kubernetes.md, "Side by side with Kueue"): Kueue's manager, built from upstream source by
# `kueue.sh install` (tests/cluster/kueue/build.sh, cached outside the checkout), started on the
# cluster of the fixture "kube" (kube.cmake) before the first Kueue* test, stopped after the last.
# The tests require "kueue" only (gtest_discover_tests takes one value a property), whose setup and
# cleanup require "kube": the cluster starts before Kueue and stops after it.
add_test(NAME service.kueue.start COMMAND ${CMAKE_SOURCE_DIR}/scripts/services/kueue.sh start ${ARBITER_KUBE_DIR})
set_tests_properties(service.kueue.start PROPERTIES FIXTURES_SETUP kueue FIXTURES_REQUIRED kube TIMEOUT 240)
add_test(NAME service.kueue.stop COMMAND ${CMAKE_SOURCE_DIR}/scripts/services/kueue.sh stop ${ARBITER_KUBE_DIR})
set_tests_properties(service.kueue.stop PROPERTIES FIXTURES_CLEANUP kueue FIXTURES_REQUIRED kube TIMEOUT 120)
gtest_discover_tests(test_integration TEST_FILTER "Kueue*" DISCOVERY_TIMEOUT 60
                     PROPERTIES FIXTURES_REQUIRED kueue TIMEOUT 300
                     ENVIRONMENT "ARBITER_KUBE_DIR=${ARBITER_KUBE_DIR}")
