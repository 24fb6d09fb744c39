// Package kubernetes holds nslab's manifests for Kubernetes (the Lab
// resource, the agents' DaemonSet and RBAC, a user's roles, the policy
// that keeps an agent to its own host's status), embedded so that
// nslab-kube manifests prints them with the image a cluster runs.
package kubernetes

import (
	"embed"
	"fmt"
	"strings"
)

//go:embed crd.yaml agent.yaml user.yaml policy.yaml
var files embed.FS

// Order is the order the manifests are applied in: the resource and the
// policy before the agents that use them.
var Order = []string{"crd.yaml", "policy.yaml", "agent.yaml", "user.yaml"}

// ImagePlaceholder is the image the agent's manifest names until
// Manifests writes the one given.
const ImagePlaceholder = "NSLAB_IMAGE"

// Manifests is every manifest as one YAML stream, the agents' image
// being image.
func Manifests(image string) (string, error) {
	if image == "" || strings.ContainsAny(image, " \n\t\"'") {
		return "", fmt.Errorf("image %q: give a reference such as registry.example/nslab:1.2.3", image)
	}
	var b strings.Builder
	for i, name := range Order {
		data, err := files.ReadFile(name)
		if err != nil {
			return "", err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.WriteString("# " + name + "\n")
		b.WriteString(strings.ReplaceAll(string(data), ImagePlaceholder, image))
	}
	return b.String(), nil
}

// File is one manifest as embedded, the image being image.
func File(name, image string) (string, error) {
	data, err := files.ReadFile(name)
	if err != nil {
		return "", err
	}
	return strings.ReplaceAll(string(data), ImagePlaceholder, image), nil
}
