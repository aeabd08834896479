#!/usr/bin/env bats
# SigV4 and S3 addressing (lib/store/s3_sign.c, s3_endpoint.c) against botocore, and the
# region and endpoint read from the environment and the AWS CLI's config file. AWS's
# published vectors are the unit test tests/unit/s3_sign.c.

load helpers
load s3

setup() {
	aws_setup s3-sign
	SIGN="$MTC_BIN/../unit/s3_sign"
	mkdir -p "$HOME/.aws"
}

teardown() { rm -rf "$WORK"; }

@test "signatures, paths and queries are botocore's for tricky keys, queries and session tokens" {
	need_boto3
	run "$MTC_PY" "$BATS_TEST_DIRNAME/s3_oracle.py" "$SIGN"
	echo "$output"
	assert_success
	refute_output --partial "not ok"
	assert_line "1..18"
}

@test "the region: AWS_REGION, AWS_DEFAULT_REGION, the profile's, us-east-1" {
	printf '[default]\nregion = ap-south-1\n\n[profile eu]\nregion = eu-north-1\n' >"$HOME/.aws/config"
	run "$SIGN" target bkt
	assert_output "ap-south-1 https://bkt.s3.ap-south-1.amazonaws.com bkt.s3.ap-south-1.amazonaws.com -"
	AWS_PROFILE=eu run "$SIGN" target bkt
	assert_output --partial "eu-north-1 https://bkt.s3.eu-north-1.amazonaws.com "
	AWS_PROFILE=eu AWS_DEFAULT_REGION=us-west-2 run "$SIGN" target bkt
	assert_output --partial "us-west-2 "
	AWS_PROFILE=eu AWS_DEFAULT_REGION=us-west-2 AWS_REGION=ca-central-1 run "$SIGN" target bkt
	assert_output --partial "ca-central-1 "
	rm "$HOME/.aws/config"
	run "$SIGN" target bkt
	assert_output "us-east-1 https://bkt.s3.amazonaws.com bkt.s3.amazonaws.com -"
}

@test "the endpoint: the option, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's endpoint_url" {
	printf '[default]\nendpoint_url = http://127.0.0.1:9000\ns3 =\n  addressing_style = virtual\n' >"$HOME/.aws/config"
	run "$SIGN" target bkt
	assert_failure 1
	assert_output "s3_sign: bucket 'bkt' cannot be addressed virtual-hosted on 'http://127.0.0.1:9000'"
	printf '[default]\nendpoint_url = http://minio.test:9000\ns3 =\n  addressing_style = virtual\n' >"$HOME/.aws/config"
	run "$SIGN" target bkt
	assert_output "us-east-1 http://bkt.minio.test:9000 bkt.minio.test:9000 -"
	printf '[default]\nendpoint_url = http://minio.test:9000\n' >"$HOME/.aws/config"
	run "$SIGN" target bkt
	assert_output "us-east-1 http://minio.test:9000 minio.test:9000 /bkt"
	AWS_ENDPOINT_URL=http://any.test run "$SIGN" target bkt
	assert_output "us-east-1 http://any.test any.test /bkt"
	AWS_ENDPOINT_URL=http://any.test AWS_ENDPOINT_URL_S3=https://s3only.test:8443 run "$SIGN" target bkt
	assert_output "us-east-1 https://s3only.test:8443 s3only.test:8443 /bkt"
	AWS_ENDPOINT_URL_S3=https://s3only.test run "$SIGN" target bkt http://option.test
	assert_output "us-east-1 http://option.test option.test /bkt"
	run "$SIGN" target bkt 'http://user:pw@host.test'
	assert_failure 1
	assert_output "s3_sign: endpoint 'http://user:pw@host.test' holds credentials: give them as keys"
}
