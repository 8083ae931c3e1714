#!/bin/sh
# The encrypted keys of tests/config_files.rs, from the plain ones of
# ../pki (OpenSSL 3): legacy PEM encryption (Proc-Type/DEK-Info), PKCS#8
# PBES2 with several PRFs and ciphers, and PBES1 (which flowsec refuses).
set -e
cd "$(dirname "$0")"
P=../pki
openssl rsa -in $P/sunKey.pem -aes256 -traditional -passout pass:sun-secret -out sunKey.aes256.pem
openssl ec -in $P/moonKey.pem -des3 -passout pass:moon-secret -out moonKey.des3.pem
openssl pkcs8 -topk8 -in $P/carolKey.pem -v2 aes-128-cbc -v2prf hmacWithSHA256 -passout pass:carol-secret -out carolKey.pkcs8.pem
openssl pkcs8 -topk8 -in $P/moonKey.pem -v2 des3 -v2prf hmacWithSHA1 -passout pass:moon-secret -outform DER -out moonKey.pkcs8.der
openssl pkcs8 -topk8 -in $P/sunKey.pem -v2 aes-256-cbc -v2prf hmacWithSHA512 -iter 1000 -passout pass:sun-secret -out sunKey.pkcs8.pem
openssl pkcs8 -topk8 -in $P/marsKey.pem -v1 PBE-SHA1-3DES -passout pass:x -out marsKey.pbes1.pem
