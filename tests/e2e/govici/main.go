// A vici client no one here wrote: strongSwan's govici, for
// tests/e2e/vici.sh. `govici-list SOCKET` prints one line per IKE SA of
// list-sas and one per Child SA under it:
//
//	ike NAME STATE REMOTE-HOST
//	child NAME STATE SPI-IN SPI-OUT BYTES-IN BYTES-OUT
package main

import (
	"fmt"
	"os"

	"github.com/strongswan/govici/vici"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: govici-list SOCKET")
		os.Exit(2)
	}
	s, err := vici.NewSession(vici.WithSocketPath(os.Args[1]))
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		os.Exit(1)
	}
	defer s.Close()
	msgs, err := s.StreamedCommandRequest("list-sas", "list-sa", nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "list-sas:", err)
		os.Exit(1)
	}
	for _, m := range msgs {
		if m.Err() != nil {
			fmt.Fprintln(os.Stderr, "list-sas:", m.Err())
			os.Exit(1)
		}
		for _, name := range m.Keys() {
			ike, ok := m.Get(name).(*vici.Message)
			if !ok {
				continue
			}
			fmt.Printf("ike %s %v %v\n", name, ike.Get("state"), ike.Get("remote-host"))
			children, ok := ike.Get("child-sas").(*vici.Message)
			if !ok {
				continue
			}
			for _, k := range children.Keys() {
				c, ok := children.Get(k).(*vici.Message)
				if !ok {
					continue
				}
				fmt.Printf("child %v %v %v %v %v %v\n", c.Get("name"), c.Get("state"),
					c.Get("spi-in"), c.Get("spi-out"), c.Get("bytes-in"), c.Get("bytes-out"))
			}
		}
	}
}
