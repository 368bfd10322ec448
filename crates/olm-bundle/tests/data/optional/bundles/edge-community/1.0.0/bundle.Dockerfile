FROM scratch

LABEL operators.operatorframework.io.bundle.mediatype.v1=registry+v1
LABEL operators.operatorframework.io.bundle.package.v1=edge-community
LABEL com.redhat.openshift.versions="=v4.9"

COPY manifests /manifests/
COPY metadata /metadata/
