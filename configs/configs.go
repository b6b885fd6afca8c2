// Package configs embeds the YAML configs shipped with stoke, so that the
// train command runs the quickstart with no file at hand.
package configs

import "embed"

// FS holds every *.yaml file of this folder.
//
//go:embed *.yaml
var FS embed.FS

// Default is the config the train command uses when given none.
const Default = "quickstart.yaml"
