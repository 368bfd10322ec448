package main

// The -cases table: upstream's own test vectors for the preflight (operator-controller's
// crdupgradesafety tests and their testdata, crdify's validation tests), listed in a JSON file
// that olm-bundle's test reads too (crates/olm-bundle/tests/data/crdupgradesafety/cases.json,
// README.md there). Each side of a case is one of
//
//	{"file": "<path relative to the cases file>"}  a CRD manifest, taken as it is
//	{"crd": {...}}                                 a CRD, taken as it is
//	{"property": {...}}                            a property schema, wrapped by propertyCRD
//
// and the installed side is used as it is (status.storedVersions included), as upstream's
// tests hand it to the preflight.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

type caseSide struct {
	File     string          `json:"file,omitempty"`
	CRD      json.RawMessage `json:"crd,omitempty"`
	Property json.RawMessage `json:"property,omitempty"`
}

type upstreamCase struct {
	Source string   `json:"source"`
	Name   string   `json:"name"`
	Old    caseSide `json:"old"`
	New    caseSide `json:"new"`
}

// propertyCRD is the CRD a property vector is checked in: one served, stored version v1 whose
// root object has the property as "field" (so its path is ^.field), v1 recorded as stored.
func propertyCRD(prop json.RawMessage) []byte {
	return []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",` +
		`"metadata":{"name":"widgets.example.com"},` +
		`"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},` +
		`"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":` +
		`{"type":"object","properties":{"field":` + string(prop) + `}}}}]},` +
		`"status":{"storedVersions":["v1"]}}`)
}

func (s caseSide) load(dir string) (apiextensionsv1.CustomResourceDefinition, error) {
	var raw []byte
	switch {
	case s.File != "":
		b, err := os.ReadFile(filepath.Join(dir, s.File))
		if err != nil {
			return apiextensionsv1.CustomResourceDefinition{}, err
		}
		raw = b
	case len(s.CRD) > 0:
		raw = s.CRD
	case len(s.Property) > 0:
		raw = propertyCRD(s.Property)
	default:
		return apiextensionsv1.CustomResourceDefinition{}, fmt.Errorf("case side with neither file, crd nor property")
	}
	var crd apiextensionsv1.CustomResourceDefinition
	err := json.Unmarshal(raw, &crd)
	return crd, err
}

// upstreamCases writes one outcome per case of the cases file, in the file's order: the case
// as "<source>/<name>: " and then what check writes.
func upstreamCases(file string) string {
	text, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var doc struct {
		Cases []upstreamCase `json:"cases"`
	}
	if err := json.Unmarshal(text, &doc); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", file, err)
		os.Exit(1)
	}
	dir := filepath.Dir(file)
	var b strings.Builder
	for _, c := range doc.Cases {
		old, err := c.Old.load(dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s/%s: old: %v\n", c.Source, c.Name, err)
			os.Exit(1)
		}
		new, err := c.New.load(dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s/%s: new: %v\n", c.Source, c.Name, err)
			os.Exit(1)
		}
		fmt.Fprintf(&b, "%s/%s: %s\n", c.Source, c.Name, checkInstalled(&old, new))
	}
	return b.String()
}
