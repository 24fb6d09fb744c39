package lab

import (
	"github.com/nslab/nslab/topology/lab/deployed"
)

// markerPrefix starts every ifalias nslab sets.
const markerPrefix = deployed.MarkerPrefix

// nsMarker is the ifalias of a lab namespace's loopback.
func nsMarker(labName, node string) string { return deployed.NSMarker(labName, node) }

// linkMarker is the ifalias of every veth end and bridge nslab creates.
func linkMarker(labName string) string { return markerPrefix + labName }
