"""Sets moto up for tests/s3_auth.bats through boto3, as an administrator would.

s3_moto.py URL user NAME           a user allowed s3:* and its access key: prints "ID SECRET"
s3_moto.py URL role NAME           a role allowed s3:*, trusting any web identity: prints its ARN
s3_moto.py URL bucket NAME         creates the bucket
s3_moto.py URL enforce [N]         after N more requests (default 0), every request must be
                                   signed by a known key: moto asks it of STS's unsigned
                                   AssumeRoleWithWebIdentity too, which N lets through
"""
import json
import sys
import urllib.request

import boto3

url, verb, args = sys.argv[1], sys.argv[2], sys.argv[3:]
kw = dict(endpoint_url=url, region_name="us-east-1", aws_access_key_id="admin",
          aws_secret_access_key="admin")
ALLOW_S3 = json.dumps({"Version": "2012-10-17",
                       "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]})

if verb == "user":
    iam = boto3.client("iam", **kw)
    iam.create_user(UserName=args[0])
    iam.put_user_policy(UserName=args[0], PolicyName="s3", PolicyDocument=ALLOW_S3)
    k = iam.create_access_key(UserName=args[0])["AccessKey"]
    print(k["AccessKeyId"], k["SecretAccessKey"])
elif verb == "role":
    iam = boto3.client("iam", **kw)
    trust = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Federated": "*"},
        "Action": "sts:AssumeRoleWithWebIdentity"}]}
    arn = iam.create_role(RoleName=args[0], AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    iam.put_role_policy(RoleName=args[0], PolicyName="s3", PolicyDocument=ALLOW_S3)
    print(arn)
elif verb == "bucket":
    boto3.client("s3", **kw).create_bucket(Bucket=args[0])
elif verb == "enforce":
    urllib.request.urlopen(urllib.request.Request(url + "/moto-api/reset-auth", data=(args[0] if args else "0").encode(), method="POST",
                                                  headers={"Content-Type": "text/plain"})).read()
else:
    sys.exit("s3_moto.py: unknown verb " + verb)
