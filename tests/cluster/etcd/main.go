// Command etcd is the etcd server (go.etcd.io/etcd/server/v3, the release pinned in ../go.mod)
// with its usual flags: the etcd repository's own main is in a module that only calls etcdmain.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
