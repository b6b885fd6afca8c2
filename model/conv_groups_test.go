package model

import (
	"slices"
	"strings"
	"testing"
)

// TestConv2dGroupsWeightShape: a grouped conv's weight is nn.Conv2d's,
// (cout, cin/groups, k, k), and channel counts that groups does not divide
// are refused, the message naming the layer and groups.
func TestConv2dGroupsWeightShape(t *testing.T) {
	m := newModel(t, tinySpec, Options{Batch: 2, Seed: 1})
	b := newBuilder(m)
	c, err := newConv2d(b, "layer1.0.conv2", 8, 12, 3, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{12, 2, 3, 3}; !slices.Equal(c.w.shape, want) {
		t.Errorf("weight shape %v, want %v", c.w.shape, want)
	}
	for _, s := range []struct{ cin, cout, groups int }{{6, 8, 4}, {8, 6, 4}, {8, 8, 0}} {
		_, err := newConv2d(b, "layer1.0.conv2", s.cin, s.cout, 3, 1, s.groups)
		if err == nil || !strings.Contains(err.Error(), "layer1.0.conv2") || !strings.Contains(err.Error(), "groups=") {
			t.Errorf("%+v: error %v, want one naming the layer and groups", s, err)
		}
	}
}
