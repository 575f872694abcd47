#!/bin/sh
# Remakes the test certificates (a CA, and a certificate it signed for 127.0.0.1 and localhost), valid a century:
# only the proxy's TLS tests use them, on loopback. Run from this folder.
set -e
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 36500 -subj "/CN=ctxfit test CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" \
  -keyout ca-key.pem -out ca.pem
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
  -keyout localhost-key.pem -out localhost.csr
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n' > ext.cnf
openssl x509 -req -in localhost.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 36500 -extfile ext.cnf \
  -out localhost.pem
rm -f localhost.csr ext.cnf ca.srl ca-key.pem
