package kvevents

import "net"

// PublishOn starts a Publisher on a listener the test controls.
func PublishOn(ln net.Listener, topic string) *Publisher { return publishOn(ln, topic) }
