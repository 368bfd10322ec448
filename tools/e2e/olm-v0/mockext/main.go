// mock-extension-apiserver stands in for the image OLM v0's e2e suite names for the extension
// API servers of its hand-made CSVs (quay.io/operator-framework/mock-extension-apiserver:master),
// which cannot be pulled here. The suite's specs only need the APIService it backs to become
// Available, so that the CSV owning it can succeed: the aggregator's availability check GETs the
// group version's discovery document through the Service, and its discovery and OpenAPI
// controllers read /apis and /openapi/v2|v3. This serves exactly those, over TLS with the
// serving certificate OLM mounts, and empty lists for the mocked resources. It does no
// authentication: the suite never calls the mocked API as a user.
//
//	mock-extension-apiserver --mock-group-version GROUP/VERSION --mock-kinds KIND[,KIND]
//	    [--secure-port 5443] [--cert-dir DIR] [-v N] [--debug]
//
// Each kind's resource is its lower-cased name with an "s" (fez → fezs), as the suite's
// APIServiceDescriptions name them.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

type resource struct {
	Name         string   `json:"name"`
	SingularName string   `json:"singularName"`
	Namespaced   bool     `json:"namespaced"`
	Kind         string   `json:"kind"`
	Verbs        []string `json:"verbs"`
}

func main() {
	kinds := flag.String("mock-kinds", "", "comma-separated kinds to serve")
	groupVersion := flag.String("mock-group-version", "", "GROUP/VERSION to serve")
	port := flag.Int("secure-port", 5443, "HTTPS port")
	// OLM mounts the APIService's serving certificate here (apiserver.crt, apiserver.key), where
	// k8s.io/apiserver's default --cert-dir looks for it.
	certDir := flag.String("cert-dir", "/apiserver.local.config/certificates", "serving certificate folder")
	flag.Int("v", 0, "log level (accepted for compatibility)")
	debug := flag.Bool("debug", false, "log each request")
	flag.Parse()

	group, version, ok := strings.Cut(*groupVersion, "/")
	if !ok || group == "" || version == "" || *kinds == "" {
		fmt.Fprintln(os.Stderr, "mock-extension-apiserver: --mock-group-version GROUP/VERSION and --mock-kinds are required")
		os.Exit(2)
	}
	var resources []resource
	for _, k := range strings.Split(*kinds, ",") {
		if k = strings.TrimSpace(k); k != "" {
			lower := strings.ToLower(k)
			resources = append(resources, resource{
				Name: lower + "s", SingularName: lower, Namespaced: true, Kind: k,
				Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"},
			})
		}
	}

	mux := http.NewServeMux()
	groupDoc := map[string]any{
		"kind": "APIGroup", "apiVersion": "v1", "name": group,
		"versions":         []any{map[string]string{"groupVersion": *groupVersion, "version": version}},
		"preferredVersion": map[string]string{"groupVersion": *groupVersion, "version": version},
	}
	mux.HandleFunc("/apis", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": []any{groupDoc}})
	})
	mux.HandleFunc("/apis/"+group, func(w http.ResponseWriter, r *http.Request) { reply(w, groupDoc) })
	mux.HandleFunc("/apis/"+*groupVersion, func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": *groupVersion, "resources": resources})
	})
	// Collections of the mocked resources, cluster-wide or in a namespace, are empty.
	mux.HandleFunc("/apis/"+*groupVersion+"/", func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, "/apis/"+*groupVersion), "/"), "/")
		if len(parts) == 3 && parts[0] == "namespaces" {
			parts = parts[2:]
		}
		for _, res := range resources {
			if len(parts) == 1 && parts[0] == res.Name && r.Method == http.MethodGet {
				reply(w, map[string]any{"kind": res.Kind + "List", "apiVersion": *groupVersion, "metadata": map[string]any{}, "items": []any{}})
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": r.URL.Path + " not found"})
	})
	mux.HandleFunc("/openapi/v2", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"swagger": "2.0", "info": map[string]string{"title": "mock-extension-apiserver", "version": version}, "paths": map[string]any{}})
	})
	mux.HandleFunc("/openapi/v3", func(w http.ResponseWriter, r *http.Request) { reply(w, map[string]any{"paths": map[string]any{}}) })
	for _, p := range []string{"/healthz", "/readyz", "/livez"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	}

	var handler http.Handler = mux
	if *debug {
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			log.Printf("%s %s", r.Method, r.URL.RequestURI())
			mux.ServeHTTP(w, r)
		})
	}
	addr := fmt.Sprintf(":%d", *port)
	log.Printf("serving %s (%s) on %s", *groupVersion, *kinds, addr)
	err := http.ListenAndServeTLS(addr, filepath.Join(*certDir, "apiserver.crt"), filepath.Join(*certDir, "apiserver.key"), handler)
	log.Fatal(err)
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Printf("writing a reply: %v", err)
	}
}
