# The Kubernetes test cluster (scripts/services/kube.sh; docs/kubernetes.md): etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler and KWOK, built from upstream source by
# `kube.sh install` (tests/cluster/build.sh, cached outside the checkout). Started before the
# first Kube* test (fixture "kube") in the build directory, on free ports; the tests find it
# through ARBITER_KUBE_DIR (DIR/kubeconfig, DIR/bin/kubectl). Stopped by PID after the last.
set(ARBITER_KUBE_DIR ${CMAKE_BINARY_DIR}/kube-cluster)
add_test(NAME service.kube.start COMMAND ${CMAKE_SOURCE_DIR}/scripts/services/kube.sh start ${ARBITER_KUBE_DIR})
set_tests_properties(service.kube.start PROPERTIES FIXTURES_SETUP kube TIMEOUT 240)
add_test(NAME service.kube.stop COMMAND ${CMAKE_SOURCE_DIR}/scripts/services/kube.sh stop ${ARBITER_KUBE_DIR})
set_tests_properties(service.kube.stop PROPERTIES FIXTURES_CLEANUP kube TIMEOUT 120)
gtest_discover_tests(test_integration TEST_FILTER "Kube*" DISCOVERY_TIMEOUT 60
                     PROPERTIES FIXTURES_REQUIRED kube TIMEOUT 300
                     ENVIRONMENT "ARBITER_KUBE_DIR=${ARBITER_KUBE_DIR}")
