package main

// One-change mutations of the data set's apiextensions.k8s.io/v1 CRDs, each checked both ways
// (the original installed and the mutated one applied, then the reverse), so every keyword
// crdify knows, and several it does not, is seen added, changed and removed on an existing field.
//
// A case is written as
//
//	<package>/<version> <crd> #<n> <up|down> <JSON Patch op>
//	<outcome as in the pairs table>
//
// The op is one RFC 6902 add, remove or replace whose path points into the CRD as JSON; olm's test
// applies the same op to the same CRD read by olm, so the generator lives only here.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

type op struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
}

func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// node is one schema node found in a version's schema, by JSON pointer.
type node struct {
	ptr string
	m   map[string]any
}

func walkNodes(m map[string]any, ptr string, out *[]node) {
	*out = append(*out, node{ptr, m})
	if props, ok := m["properties"].(map[string]any); ok {
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if c, ok := props[k].(map[string]any); ok {
				walkNodes(c, ptr+"/properties/"+escape(k), out)
			}
		}
	}
	if it, ok := m["items"].(map[string]any); ok {
		walkNodes(it, ptr+"/items", out)
	}
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func firstProp(m map[string]any) string {
	props, _ := m["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

// mutationsOf lists the one-change ops for one node.
func mutationsOf(n node) []op {
	p, m := n.ptr, n.m
	add := func(k, v string) op { return op{"add", p + "/" + escape(k), raw(v)} }
	rm := func(k string) op { return op{"remove", p + "/" + escape(k), nil} }
	_, hasProps := m["properties"]
	typ, _ := m["type"].(string)
	var ops []op
	// Keywords no crdify comparator handles, added to an existing field.
	ops = append(ops,
		add("anyOf", `[{"minLength":1},{"maxLength":3}]`),
		add("allOf", `[{"minLength":1}]`),
		add("not", `{"maxLength":0}`),
		add("oneOf", `[{"minLength":1},{"maxLength":3}]`),
		add("title", `"A title"`),
		add("format", `"email"`),
		add("x-kubernetes-validations", `[{"rule":"self.size() > 0","message":"must not be empty"}]`),
		add("description", `"changed description"`),
		add("nullable", `true`),
		add("example", `{"b":1,"a":"x"}`),
		add("externalDocs", `{"url":"https://example.com"}`),
		add("x-kubernetes-int-or-string", `true`),
	)
	switch typ {
	case "string":
		ops = append(ops,
			add("enum", `["a","b"]`),
			add("pattern", `"^a"`),
			add("maxLength", `10`),
			add("minLength", `2`),
			add("default", `"x"`),
			add("type", `"integer"`),
		)
	case "integer", "number":
		ops = append(ops,
			add("maximum", `10`),
			add("minimum", `2`),
			add("multipleOf", `2`),
			add("exclusiveMaximum", `true`),
			add("default", `1`),
			add("type", `"string"`),
		)
	case "boolean":
		ops = append(ops, add("default", `true`), add("type", `"string"`))
	case "array":
		ops = append(ops,
			add("maxItems", `5`),
			add("minItems", `1`),
			add("uniqueItems", `true`),
			add("x-kubernetes-list-type", `"atomic"`),
			add("x-kubernetes-list-map-keys", `["name"]`),
			add("default", `[]`),
		)
	case "object":
		ops = append(ops,
			add("additionalProperties", `{"type":"string"}`),
			add("patternProperties", `{"^a":{"type":"string"}}`),
			add("maxProperties", `5`),
			add("minProperties", `1`),
			add("x-kubernetes-preserve-unknown-fields", `true`),
			add("x-kubernetes-map-type", `"atomic"`),
			add("x-kubernetes-embedded-resource", `true`),
			add("default", `{"b":1,"a":{"d":[1,"x"],"c":null}}`),
		)
		if hasProps {
			if f := firstProp(m); f != "" {
				ops = append(ops,
					add("required", strconv.Quote(f)+"]"), // fixed below
					op{"remove", p + "/properties/" + escape(f), nil},
				)
				ops[len(ops)-2] = add("required", "["+strconv.Quote(f)+"]")
			}
		}
	}
	// Changes to what the field already has.
	if e, ok := m["enum"].([]any); ok && len(e) >= 2 {
		b, _ := json.Marshal(e[:len(e)-1])
		ops = append(ops, op{"replace", p + "/enum", b})
	}
	if d, ok := m["default"]; ok {
		ops = append(ops, rm("default"), op{"replace", p + "/default", raw("null")})
		if f, ok := d.(float64); ok && f == float64(int64(f)) {
			ops = append(ops, op{"replace", p + "/default", raw(strconv.FormatInt(int64(f), 10) + ".0")})
		}
	}
	if _, ok := m["x-kubernetes-validations"]; ok {
		ops = append(ops, rm("x-kubernetes-validations"),
			op{"replace", p + "/x-kubernetes-validations/0/rule", raw(`"self == oldSelf"`)})
	}
	if _, ok := m["pattern"]; ok {
		ops = append(ops, op{"replace", p + "/pattern", raw(`"^changed$"`)})
	}
	if _, ok := m["maximum"]; ok {
		ops = append(ops, op{"replace", p + "/maximum", raw(`0`)})
	}
	if _, ok := m["oneOf"]; ok {
		ops = append(ops, rm("oneOf"))
	}
	if _, ok := m["anyOf"]; ok {
		ops = append(ops, rm("anyOf"))
	}
	return ops
}

// pick chooses the nodes to mutate: the first (by path) of each kind, skipping the root and
// apiVersion/kind/metadata.
func pick(nodes []node) []node {
	kinds := []func(map[string]any) bool{
		func(m map[string]any) bool { return m["type"] == "string" && m["enum"] == nil },
		func(m map[string]any) bool { _, ok := m["enum"].([]any); return ok },
		func(m map[string]any) bool { return m["type"] == "integer" },
		func(m map[string]any) bool { return m["type"] == "boolean" },
		func(m map[string]any) bool { _, ok := m["properties"]; return m["type"] == "object" && ok },
		func(m map[string]any) bool { return m["type"] == "array" },
		func(m map[string]any) bool { _, ok := m["default"]; return ok },
		func(m map[string]any) bool { _, ok := m["x-kubernetes-validations"]; return ok },
		func(m map[string]any) bool { _, ok := m["pattern"]; return ok },
		func(m map[string]any) bool { _, ok := m["maximum"]; return ok },
		func(m map[string]any) bool { _, ok := m["oneOf"]; return ok },
		func(m map[string]any) bool { _, ok := m["anyOf"]; return ok },
	}
	var out []node
	for _, k := range kinds {
		for _, n := range nodes {
			if !strings.Contains(n.ptr, "/openAPIV3Schema/properties/") ||
				strings.Contains(n.ptr, "/openAPIV3Schema/properties/metadata") ||
				strings.HasSuffix(n.ptr, "/openAPIV3Schema/properties/apiVersion") ||
				strings.HasSuffix(n.ptr, "/openAPIV3Schema/properties/kind") {
				continue
			}
			if k(n.m) {
				if !slices.ContainsFunc(out, func(o node) bool { return o.ptr == n.ptr }) {
					out = append(out, n)
				}
				break
			}
		}
	}
	return out
}

func resolve(doc any, ptr string) (parent any, key string, ok bool) {
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	cur := doc
	for i, raw := range parts {
		k := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
		if i == len(parts)-1 {
			return cur, k, true
		}
		switch c := cur.(type) {
		case map[string]any:
			cur = c[k]
		case []any:
			idx, err := strconv.Atoi(k)
			if err != nil || idx < 0 || idx >= len(c) {
				return nil, "", false
			}
			cur = c[idx]
		default:
			return nil, "", false
		}
	}
	return nil, "", false
}

func apply(doc map[string]any, o op) bool {
	parent, key, ok := resolve(doc, o.Path)
	if !ok {
		return false
	}
	var v any
	if o.Value != nil {
		if err := json.Unmarshal(o.Value, &v); err != nil {
			return false
		}
	}
	switch p := parent.(type) {
	case map[string]any:
		_, exists := p[key]
		switch o.Op {
		case "add":
			p[key] = v
		case "replace":
			if !exists {
				return false
			}
			p[key] = v
		case "remove":
			if !exists {
				return false
			}
			delete(p, key)
		}
		return true
	case []any:
		idx, err := strconv.Atoi(key)
		if err != nil || idx < 0 || idx >= len(p) || o.Op != "replace" {
			return false
		}
		p[idx] = v
		return true
	}
	return false
}

func toMap(crd apiextensionsv1.CustomResourceDefinition) map[string]any {
	b, err := json.Marshal(crd)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	return m
}

func fromMap(m map[string]any) apiextensionsv1.CustomResourceDefinition {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(b, &crd); err != nil {
		panic(err)
	}
	return crd
}

func size(c apiextensionsv1.CustomResourceDefinition) int {
	b, _ := json.Marshal(c)
	return len(b)
}

// mutationCases writes the mutation table for the newest bundle of every package: its smallest
// apiextensions.k8s.io/v1 CRD (the check is slow on large ones), the storage version's schema.
func mutationCases(bundles string, load func(string) ([]apiextensionsv1.CustomResourceDefinition, []string)) string {
	var b strings.Builder
	pkgs, _ := filepath.Glob(filepath.Join(bundles, "*"))
	slices.Sort(pkgs)
	for pkgIndex, pkgDir := range pkgs {
		vs := versionsOf(pkgDir)
		if len(vs) == 0 {
			continue
		}
		newest := vs[len(vs)-1]
		crds, apiVersions := load(newest.dir)
		idx := -1
		for i, c := range crds {
			if apiVersions[i] != "apiextensions.k8s.io/v1" {
				continue
			}
			if idx < 0 || size(c) < size(crds[idx]) || (size(c) == size(crds[idx]) && c.Name < crds[idx].Name) {
				idx = i
			}
		}
		if idx < 0 {
			continue
		}
		base := crds[idx]
		doc := toMap(base)
		var nodes []node
		for vi, v := range base.Spec.Versions {
			if !v.Storage {
				continue
			}
			s, ok := doc["spec"].(map[string]any)["versions"].([]any)[vi].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
			if ok {
				walkNodes(s, fmt.Sprintf("/spec/versions/%d/schema/openAPIV3Schema", vi), &nodes)
			}
		}
		n, k := 0, 0
		for _, nd := range pick(nodes) {
			for _, o := range mutationsOf(nd) {
				// A third of the ops per package, a different third for the next package: every
				// op is still seen on many CRDs, and the table stays small.
				k++
				if (k+pkgIndex)%3 != 0 {
					continue
				}
				mutated := toMap(base)
				if !apply(mutated, o) {
					continue
				}
				changed := fromMap(mutated)
				opText, _ := json.Marshal(o)
				n++
				for _, dir := range []string{"up", "down"} {
					old, new := base, changed
					if dir == "down" {
						old, new = changed, base
					}
					fmt.Fprintf(&b, "%s/%s %s #%d %s %s\n", filepath.Base(pkgDir), newest.v, base.Name, n, dir, opText)
					b.WriteString(check(old, new))
					b.WriteString("\n")
				}
			}
		}
	}
	return b.String()
}
