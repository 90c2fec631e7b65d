/**
 * envoyproxy/ratelimit's published behaviour as data: each case one behaviour, with the config as
 * their users write it and the answers their service gives (from their README's examples, their
 * test/config files with config_test.go, and test/integration). Written here in our own words;
 * run by ./conformance.ts on any backend.
 */
import { NONE, ok, over, req, step, UNLIMITED, type EnvoyConformanceCase, type EnvoyRefusalCase } from "./conformance";

const file = (name: string, text: string) => ({ name, text });

export const ENVOY_CASES: EnvoyConformanceCase[] = [
  {
    name: "a rule with a value limits that value only; other values pass without a limit",
    source: "README example 1",
    configs: [
      file(
        "mongo_cps.yaml",
        `domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit:
      unit: second
      requests_per_unit: 500

  - key: database
    value: default
    rate_limit:
      unit: second
      requests_per_unit: 500
`,
      ),
    ],
    steps: [
      step(req("mongo_cps", [["database", "users"]]), [ok([500, "SECOND"], 0, 1)], { times: 500 }),
      step(req("mongo_cps", [["database", "users"]]), [over([500, "SECOND"], 1)]),
      step(req("mongo_cps", [["database", "default"]]), [ok([500, "SECOND"], 499)]),
      step(req("mongo_cps", [["database", "other"]]), [NONE]),
    ],
  },
  {
    name: "a key-only rule counts each value separately",
    source: "README example 2",
    configs: [file("messaging.yaml", MESSAGING())],
    steps: [
      step(req("messaging", [["to_number", "2061111111"]]), [ok([100, "DAY"], 0)], { times: 100 }),
      step(req("messaging", [["to_number", "2061111111"]]), [over([100, "DAY"])]),
      step(req("messaging", [["to_number", "2062222222"]]), [ok([100, "DAY"], 99)]),
    ],
  },
  {
    name: "a request is over the limit when any of its descriptors is, and every descriptor still counts",
    source: "README example 2",
    configs: [file("messaging.yaml", MESSAGING())],
    steps: [
      step(req("messaging", [["message_type", "marketing"], ["to_number", "2061111111"]], [["to_number", "2061111111"]]), [ok([5, "DAY"], 0), ok([100, "DAY"], 95)], { times: 5 }),
      step(req("messaging", [["message_type", "marketing"], ["to_number", "2061111111"]], [["to_number", "2061111111"]]), [over([5, "DAY"]), ok([100, "DAY"], 94)]),
      step(req("messaging", [["message_type", "marketing"], ["to_number", "2062222222"]]), [ok([5, "DAY"], 4)]),
      step(req("messaging", [["to_number", "2061111111"]]), [ok([100, "DAY"], 93)]),
    ],
  },
  {
    name: "a value is matched before the key-only rule of the same key, and 0 requests per unit blocks it",
    source: "README example 3",
    configs: [
      file(
        "edge_proxy_per_ip.yaml",
        `domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 10

  # Black list IP
  - key: remote_address
    value: 50.0.0.5
    rate_limit:
      unit: second
      requests_per_unit: 0
`,
      ),
    ],
    steps: [
      step(req("edge_proxy_per_ip", [["remote_address", "50.0.0.5"]]), [over([0, "SECOND"])]),
      step(req("edge_proxy_per_ip", [["remote_address", "50.0.0.1"]]), [ok([10, "SECOND"], 0)], { times: 10 }),
      step(req("edge_proxy_per_ip", [["remote_address", "50.0.0.1"]]), [over([10, "SECOND"])]),
      step(req("edge_proxy_per_ip", [["remote_address", "50.0.0.2"]]), [ok([10, "SECOND"], 9)]),
    ],
  },
  {
    name: "a request with more entries than the config has levels matches no rule",
    source: "README example 4",
    configs: [
      file(
        "example4.yaml",
        `domain: example4
descriptors:
  - key: key
    value: value
    rate_limit:
      requests_per_unit: 300
      unit: second
`,
      ),
    ],
    steps: [
      step(req("example4", [["key", "value"], ["subkey", "subvalue"]]), [NONE]),
      step(req("example4", [["key", "value"]]), [ok([300, "SECOND"], 299)]),
    ],
  },
  {
    name: "a nested rule applies to a request whose entries reach its level, and a level holding only children limits nothing",
    source: "README example 4",
    configs: [
      file(
        "example4.yaml",
        `domain: example4
descriptors:
  - key: key
    value: value
    descriptors:
      - key: subkey
        rate_limit:
          requests_per_unit: 300
          unit: second
`,
      ),
    ],
    steps: [
      step(req("example4", [["key", "value"], ["subkey", "subvalue"]]), [ok([300, "SECOND"], 299)]),
      step(req("example4", [["key", "value"]]), [NONE]),
    ],
  },
  {
    name: "an unlimited rule answers OK with 2^32-1 remaining and is never counted",
    source: "README example 5",
    configs: [
      file(
        "internal.yaml",
        `domain: internal
descriptors:
  - key: ldap
    rate_limit:
      unlimited: true

  - key: azure
    rate_limit:
      unit: minute
      requests_per_unit: 100
`,
      ),
    ],
    steps: [
      step(req("internal", [["ldap", "a"]]), [UNLIMITED], { times: 1000 }),
      step(req("internal", [["ldap", "a"]], [["azure", "b"]]), [UNLIMITED, ok([100, "MINUTE"], 99)]),
    ],
  },
  {
    name: "shadow_mode answers OK while counting past the limit",
    source: "README example 6",
    configs: [
      file(
        "example6.yaml",
        `domain: example6
descriptors:
  - key: service
    descriptors:
      - key: user
        value: user-a
        rate_limit:
          requests_per_unit: 10
          unit: second
        shadow_mode: true
      - key: user
        value: user-b
        rate_limit:
          requests_per_unit: 20
          unit: second
`,
      ),
    ],
    steps: [
      step(req("example6", [["service", "auth-service"], ["user", "user-a"]]), [ok([10, "SECOND"], 0)], { times: 10 }),
      step(req("example6", [["service", "auth-service"], ["user", "user-a"]]), [ok([10, "SECOND"], 0)], { times: 5 }),
      step(req("example6", [["service", "auth-service"], ["user", "user-b"]]), [ok([20, "SECOND"], 0)], { times: 20 }),
      step(req("example6", [["service", "auth-service"], ["user", "user-b"]]), [over([20, "SECOND"])]),
    ],
  },
  {
    name: "replaces drops the replaced limit, which then counts nothing",
    source: "README example 7",
    configs: [
      file(
        "example7.yaml",
        `domain: example7
descriptors:
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          name: specific_limit
          requests_per_unit: 5
          unit: second
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          replaces:
            - name: specific_limit
          requests_per_unit: 10
          unit: second
`,
      ),
    ],
    steps: [
      step(req("example7", [["key_1", "value_1"], ["user", "bkthomps"]], [["key_2", "value_2"], ["user", "bkthomps"]]), [NONE, ok([10, "SECOND"], 0)], { times: 10 }),
      step(req("example7", [["key_1", "value_1"], ["user", "bkthomps"]], [["key_2", "value_2"], ["user", "bkthomps"]]), [NONE, over([10, "SECOND"])]),
      step(req("example7", [["key_1", "value_1"], ["user", "bkthomps"]]), [ok([5, "SECOND", "specific_limit"], 4)]),
    ],
  },
  {
    name: "detailed_metric changes metrics, not answers: each value still counts apart",
    source: "README example 8",
    configs: [
      file(
        "example8.yaml",
        `domain: example8
descriptors:
  - key: key1
    detailed_metric: true
    rate_limit:
      unit: minute
      requests_per_unit: 10
  - key: key1
    value: value1
    rate_limit:
      unit: minute
      requests_per_unit: 20
`,
      ),
    ],
    steps: [
      step(req("example8", [["key1", "unspecified_value"]]), [ok([10, "MINUTE"], 0)], { times: 10 }),
      step(req("example8", [["key1", "unspecified_value2"]]), [ok([10, "MINUTE"], 9)]),
      step(req("example8", [["key1", "value1"]]), [ok([20, "MINUTE"], 19)]),
    ],
  },
  {
    name: "a trailing wildcard matches by prefix, each matching value counted apart",
    source: "README example 9, test/config/wildcard.yaml",
    configs: [
      file(
        "example9.yaml",
        `domain: example9
descriptors:
  - key: key1
    value: value*
    rate_limit:
      unit: minute
      requests_per_unit: 20
`,
      ),
    ],
    steps: [
      step(req("example9", [["key1", "value1"]]), [ok([20, "MINUTE"], 0)], { times: 20 }),
      step(req("example9", [["key1", "value1"]]), [over([20, "MINUTE"])]),
      step(req("example9", [["key1", "valueXYZ"]]), [ok([20, "MINUTE"], 19)]),
      step(req("example9", [["key1", "value"]]), [ok([20, "MINUTE"], 19)]),
      step(req("example9", [["key1", "other"]]), [NONE]),
    ],
  },
  {
    name: "a wildcard in the middle needs both its prefix and its suffix",
    source: "README example 9, test/config/wildcard.yaml",
    configs: [
      file(
        "example9.yaml",
        `domain: example9
descriptors:
  - key: path
    value: /api/*/action
    rate_limit:
      unit: minute
      requests_per_unit: 20
`,
      ),
    ],
    steps: [
      step(req("example9", [["path", "/api/123/action"]]), [ok([20, "MINUTE"], 19)]),
      step(req("example9", [["path", "/api/user-id/action"]]), [ok([20, "MINUTE"], 19)]),
      step(req("example9", [["path", "/api/123/other"]]), [NONE]),
      step(req("example9", [["path", "/v2/api/123/action"]]), [NONE]),
    ],
  },
  {
    name: "several wildcards match their segments in order",
    source: "README example 9, test/config/wildcard.yaml",
    configs: [
      file(
        "example9.yaml",
        `domain: example9
descriptors:
  - key: route
    value: /api/*/resource/*/action
    rate_limit:
      unit: minute
      requests_per_unit: 20
  - key: multiWild
    value: foo*bar*baz
    rate_limit:
      unit: minute
      requests_per_unit: 10
`,
      ),
    ],
    steps: [
      step(req("example9", [["route", "/api/v1/resource/123/action"]]), [ok([20, "MINUTE"], 19)]),
      step(req("example9", [["route", "/api/v1/resource/123"]]), [NONE]),
      step(req("example9", [["multiWild", "foobarbaz"]]), [ok([10, "MINUTE"], 9)]),
      step(req("example9", [["multiWild", "foo123baz"]]), [NONE]),
      step(req("example9", [["multiWild", "bar456baz"]]), [NONE]),
    ],
  },
  {
    name: "every entry's value is part of the counter, whatever value_to_metric says",
    source: "README example 10",
    configs: [
      file(
        "example10.yaml",
        `domain: example10
descriptors:
  - key: route
    value_to_metric: true
    descriptors:
      - key: http_method
        value_to_metric: true
        descriptors:
          - key: subject_id
            rate_limit:
              unit: minute
              requests_per_unit: 60
`,
      ),
    ],
    steps: [
      step(req("example10", [["route", "api"], ["http_method", "GET"], ["subject_id", "123"]]), [ok([60, "MINUTE"], 58)], { times: 2 }),
      step(req("example10", [["route", "web"], ["http_method", "POST"], ["subject_id", "123"]]), [ok([60, "MINUTE"], 59)]),
    ],
  },
  {
    name: "share_threshold gives every value under a wildcard one counter",
    source: "README example 11, test/integration share_threshold",
    configs: [
      file(
        "example11.yaml",
        `domain: example11
descriptors:
  # With share_threshold: true, all files/* matches share the same threshold
  - key: files
    value: files/*
    share_threshold: true
    rate_limit:
      unit: hour
      requests_per_unit: 10

  # Without share_threshold, each files_no_share/* match has its own isolated threshold
  - key: files_no_share
    value: files_no_share/*
    share_threshold: false
    rate_limit:
      unit: hour
      requests_per_unit: 10
`,
      ),
    ],
    steps: [
      step(req("example11", [["files", "files/a.pdf"]]), [ok([10, "HOUR"], 5)], { times: 5 }),
      step(req("example11", [["files", "files/b.csv"]]), [ok([10, "HOUR"], 0)], { times: 5 }),
      step(req("example11", [["files", "files/c.txt"]]), [over([10, "HOUR"])]),
      step(req("example11", [["files_no_share", "files_no_share/a.pdf"]]), [ok([10, "HOUR"], 0)], { times: 10 }),
      step(req("example11", [["files_no_share", "files_no_share/b.csv"]]), [ok([10, "HOUR"], 9)]),
    ],
  },
  {
    name: "an exact value wins over a matching shared wildcard, which the other values share",
    source: "test/config/share_threshold.yaml",
    configs: [
      file(
        "share_threshold.yaml",
        `domain: test-domain
descriptors:
  - key: file
    value: test1
    rate_limit:
      unit: minute
      requests_per_unit: 50
  - key: file
    value: test*
    share_threshold: true
    rate_limit:
      unit: minute
      requests_per_unit: 100
  - key: nested
    value: parent
    descriptors:
      - key: files
        value: nested/*
        share_threshold: true
        rate_limit:
          unit: minute
          requests_per_unit: 200
`,
      ),
    ],
    steps: [
      step(req("test-domain", [["file", "test1"]]), [ok([50, "MINUTE"], 49)]),
      step(req("test-domain", [["file", "test2"]]), [ok([100, "MINUTE"], 99)]),
      step(req("test-domain", [["file", "test3"]]), [ok([100, "MINUTE"], 98)]),
      step(req("test-domain", [["nested", "parent"], ["files", "nested/a"]]), [ok([200, "MINUTE"], 199)]),
      step(req("test-domain", [["nested", "parent"], ["files", "nested/b"]]), [ok([200, "MINUTE"], 198)]),
    ],
  },
  {
    name: "a value without a rate limit and without children is whitelisted",
    source: "README (descriptor list definition), test/config/basic_config.yaml",
    configs: [file("basic_config.yaml", BASIC_CONFIG())],
    steps: [
      step(req("test-domain", [["key2", "value3"]]), [NONE], { times: 100 }),
      step(req("test-domain", [["key2", "value2"]]), [ok([30, "MINUTE"], 29)]),
      step(req("test-domain", [["key2", "something"]]), [ok([20, "MINUTE"], 19)]),
    ],
  },
  {
    name: "a rule on a level with children applies to requests that stop at that level",
    source: "test/config/basic_config.yaml",
    configs: [file("basic_config.yaml", BASIC_CONFIG())],
    steps: [
      step(req("test-domain", [["key5", "value5"]]), [ok([15, "DAY"], 14)]),
      step(req("test-domain", [["key5", "value5"], ["subkey5", "subvalue5"]]), [ok([25, "DAY"], 24)]),
      step(req("test-domain", [["key5", "value5"], ["subkey5", "subvalue"]]), [NONE]),
      step(req("test-domain", [["key1", "value1"]]), [NONE]),
      step(req("test-domain", [["key1", "value1"], ["subkey1", "something"]]), [ok([5, "SECOND"], 4)]),
      step(req("test-domain", [["key1", "value1"], ["subkey1", "subvalue1"]]), [ok([10, "SECOND"], 9)]),
      step(req("test-domain", [["key4", "foo"]]), [ok([1, "DAY", "key4_rate_limit"], 0)]),
    ],
  },
  {
    name: "a domain the config does not know answers OK without a limit",
    source: "test/integration (domain foo)",
    configs: [file("basic.yaml", INTEGRATION_BASIC())],
    steps: [step(req("foo", [["hello", "world"]]), [NONE]), step(req("basic", [["key1", "foo"]]), [ok([50, "SECOND"], 49)])],
  },
  {
    name: "a descriptor over the limit does not stop the others from counting",
    source: "test/integration (another: key2 and key3)",
    configs: [file("another.yaml", INTEGRATION_ANOTHER())],
    steps: [
      step(req("another", [["key2", "r1"]], [["key3", "r1"]]), [ok([20, "MINUTE"], 10), ok([10, "HOUR"], 0)], { times: 10 }),
      step(req("another", [["key2", "r1"]], [["key3", "r1"]]), [ok([20, "MINUTE"], 5), over([10, "HOUR"])], { times: 5 }),
      step(req("another", [["key2", "r1"]]), [ok([20, "MINUTE"], 4)]),
    ],
  },
  {
    name: "a window is aligned to its unit, not to the first request",
    source: "src/limiter/cache_key.go, test/integration (one_per_minute)",
    configs: [file("basic.yaml", INTEGRATION_BASIC())],
    steps: [
      step(req("basic", [["one_per_minute", "a"]]), [ok([1, "MINUTE"], 0, 10)], { atS: 50 }),
      step(req("basic", [["one_per_minute", "a"]]), [over([1, "MINUTE"], 5)], { atS: 55 }),
      step(req("basic", [["one_per_minute", "a"]]), [ok([1, "MINUTE"], 0, 60)], { atS: 60 }),
      step(req("basic", [["key1", "a"]]), [ok([50, "SECOND"], 0, 1)], { atS: 61, times: 50 }),
      step(req("basic", [["key1", "a"]]), [over([50, "SECOND"], 1)], { atS: 61 }),
      step(req("basic", [["key1", "a"]]), [ok([50, "SECOND"], 49, 1)], { atS: 62 }),
    ],
  },
  {
    name: "hits_addend counts one call as that many requests",
    source: "src/utils/utilities.go GetHitsAddends",
    configs: [file("another.yaml", INTEGRATION_ANOTHER())],
    steps: [
      { request: { ...req("another", [["key2", "h"]]), hits_addend: 5 }, expect: { overall: "OK", statuses: [ok([20, "MINUTE"], 15)] } },
      { request: { ...req("another", [["key2", "h"]]), hits_addend: 15 }, expect: { overall: "OK", statuses: [ok([20, "MINUTE"], 0)] } },
      { request: { ...req("another", [["key2", "h"]]), hits_addend: 1 }, expect: { overall: "OVER_LIMIT", statuses: [over([20, "MINUTE"])] } },
    ],
  },
  {
    name: "a descriptor's own hits_addend wins over the request's, and 0 looks without counting",
    source: "src/utils/utilities.go GetHitsAddends",
    configs: [file("another.yaml", INTEGRATION_ANOTHER())],
    steps: [
      {
        request: { domain: "another", hits_addend: 7, descriptors: [{ entries: [{ key: "key2", value: "d" }], hits_addend: { value: 2 } }, { entries: [{ key: "key3", value: "d" }] }] },
        expect: { overall: "OK", statuses: [ok([20, "MINUTE"], 18), ok([10, "HOUR"], 3)] },
      },
      {
        request: { domain: "another", descriptors: [{ entries: [{ key: "key2", value: "d" }], hits_addend: { value: 0 } }] },
        expect: { overall: "OK", statuses: [ok([20, "MINUTE"], 18)] },
      },
    ],
  },
  {
    name: "a hit over the limit is counted too, so a smaller one right after is still over",
    source: "src/redis/fixed_cache_impl.go (INCRBY, then compare)",
    configs: [file("another.yaml", INTEGRATION_ANOTHER())],
    steps: [
      { request: { ...req("another", [["key3", "o"]]), hits_addend: 8 }, expect: { overall: "OK", statuses: [ok([10, "HOUR"], 2)] } },
      { request: { ...req("another", [["key3", "o"]]), hits_addend: 5 }, expect: { overall: "OVER_LIMIT", statuses: [over([10, "HOUR"])] } },
      { request: { ...req("another", [["key3", "o"]]), hits_addend: 1 }, expect: { overall: "OVER_LIMIT", statuses: [over([10, "HOUR"])] } },
    ],
  },
  {
    name: "a descriptor's own limit replaces the config's and counts by its entries",
    source: "test/config TestConfigLimitOverride",
    configs: [file("another.yaml", INTEGRATION_ANOTHER())],
    steps: [
      {
        request: { domain: "another", descriptors: [{ entries: [{ key: "key2", value: "v" }], limit: { requests_per_unit: 2, unit: "MINUTE" } }] },
        times: 2,
        expect: { overall: "OK", statuses: [ok([2, "MINUTE"], 0)] },
      },
      {
        request: { domain: "another", descriptors: [{ entries: [{ key: "key2", value: "v" }], limit: { requests_per_unit: 2, unit: "MINUTE" } }] },
        expect: { overall: "OVER_LIMIT", statuses: [over([2, "MINUTE"])] },
      },
      {
        request: { domain: "another", descriptors: [{ entries: [{ key: "unknown_key", value: "v" }], limit: { requests_per_unit: 3, unit: "HOUR" } }] },
        expect: { overall: "OK", statuses: [ok([3, "HOUR"], 2)] },
      },
    ],
  },
  {
    name: "quota_mode descriptors make the request over only when every one of them is",
    source: "test/service ratelimit_test.go (per-descriptor quota mode)",
    configs: [
      file(
        "quota.yaml",
        `domain: quota
descriptors:
  - key: q1
    quota_mode: true
    rate_limit:
      unit: minute
      requests_per_unit: 1
  - key: q2
    quota_mode: true
    rate_limit:
      unit: minute
      requests_per_unit: 5
  - key: plain
    rate_limit:
      unit: minute
      requests_per_unit: 1
`,
      ),
    ],
    steps: [
      { request: req("quota", [["q1", "a"]], [["q2", "a"]]), expect: { overall: "OK", statuses: [ok([1, "MINUTE"], 0), ok([5, "MINUTE"], 4)] } },
      { request: req("quota", [["q1", "a"]], [["q2", "a"]]), expect: { overall: "OK", statuses: [over([1, "MINUTE"]), ok([5, "MINUTE"], 3)] } },
      { request: req("quota", [["q1", "a"]], [["q2", "a"]]), times: 3, expect: { overall: "OK", statuses: [over([1, "MINUTE"]), ok([5, "MINUTE"], 0)] } },
      { request: req("quota", [["q1", "a"]], [["q2", "a"]]), expect: { overall: "OVER_LIMIT", statuses: [over([1, "MINUTE"]), over([5, "MINUTE"])] } },
      { request: req("quota", [["q1", "b"]], [["plain", "b"]]), times: 2, expect: { overall: "OVER_LIMIT", statuses: [over([1, "MINUTE"]), over([1, "MINUTE"])] } },
    ],
  },
  {
    name: "merged config files add their descriptors to one domain",
    source: "test/config TestDomainMerge (MERGE_DOMAIN_CONFIG)",
    mergeDomains: true,
    configs: [
      file("merge_domain_key1.yaml", "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n    rate_limit:\n      unit: minute\n      requests_per_unit: 10\n"),
      file("merge_domain_key2.yaml", "domain: test-domain\ndescriptors:\n  - key: key2\n    value: value2\n    rate_limit:\n      unit: minute\n      requests_per_unit: 20\n"),
    ],
    steps: [step(req("test-domain", [["key1", "value1"]]), [ok([10, "MINUTE"], 9)]), step(req("test-domain", [["key2", "value2"]]), [ok([20, "MINUTE"], 19)])],
  },
  {
    name: "a request without a domain or without descriptors is refused",
    source: "src/service/ratelimit.go (TestEmptyDomain, TestEmptyDescriptors)",
    configs: [file("basic.yaml", INTEGRATION_BASIC())],
    steps: [
      { request: req("", [["key1", "a"]]), expect: { error: "domain must not be empty" } },
      { request: { domain: "basic", descriptors: [] }, expect: { error: "descriptor list must not be empty" } },
    ],
  },
];

export const ENVOY_REFUSALS: EnvoyRefusalCase[] = [
  { name: "a file without a domain", source: "test/config/empty_domain.yaml", configs: [file("empty_domain.yaml", "descriptors:\n")], refused: { file: "empty_domain.yaml", path: "domain", message: /empty domain/ } },
  {
    name: "two files with one domain",
    source: "test/config/duplicate_domain.yaml",
    configs: [file("basic_config.yaml", BASIC_CONFIG()), file("duplicate_domain.yaml", "domain: test-domain\ndescriptors:\n")],
    refused: { file: "duplicate_domain.yaml", path: "domain", message: /duplicate domain/ },
  },
  { name: "a descriptor without a key", source: "test/config/empty_key.yaml", configs: [file("empty_key.yaml", "domain: test-domain\ndescriptors:\n  - value: value1\n")], refused: { file: "empty_key.yaml", path: "descriptors[0].key", message: /empty key/ } },
  {
    name: "the same key and value twice at one level",
    source: "test/config/duplicate_key.yaml",
    configs: [file("duplicate_key.yaml", "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n\n  - key: key1\n    value: value1\n")],
    refused: { file: "duplicate_key.yaml", path: "descriptors[1]", message: /duplicate descriptor.*key1_value1/ },
  },
  {
    name: "the same key twice at one level across merged files",
    source: "test/config TestDuplicateKeyDomainMerge",
    mergeDomains: true,
    configs: [
      file("merge_domain_key1.yaml", "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n    rate_limit:\n      unit: minute\n      requests_per_unit: 10\n"),
      file("merge_again.yaml", "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n    rate_limit:\n      unit: minute\n      requests_per_unit: 10\n"),
    ],
    refused: { file: "merge_again.yaml", path: "descriptors[0]", message: /duplicate descriptor composite key "key1_value1"/ },
  },
  {
    name: "an unknown unit",
    source: "test/config/bad_limit_unit.yaml",
    configs: [file("bad_limit_unit.yaml", "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n    rate_limit:\n      unit: foo\n      requests_per_unit: 5\n")],
    refused: { file: "bad_limit_unit.yaml", path: "descriptors[0].rate_limit.unit", message: /invalid rate limit unit/ },
  },
  {
    name: "a rule that replaces itself",
    source: "test/config/replaces_self.yaml",
    configs: [
      file(
        "replaces_self.yaml",
        "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n    descriptors:\n      - key: subkey1\n        rate_limit:\n          name: self\n          replaces:\n            - name: self\n          unit: second\n          requests_per_unit: 5\n",
      ),
    ],
    refused: { file: "replaces_self.yaml", path: "descriptors[0].descriptors[0].rate_limit.replaces[0].name", message: /cannot replace itself/ },
  },
  {
    name: "a replaces entry without a name",
    source: "test/config/replaces_empty.yaml",
    configs: [
      file(
        "replaces_empty.yaml",
        "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n    descriptors:\n      - key: subkey1\n        rate_limit:\n          name: self\n          replaces:\n            - name:\n          unit: second\n          requests_per_unit: 5\n",
      ),
    ],
    refused: { file: "replaces_empty.yaml", path: "descriptors[0].descriptors[0].rate_limit.replaces[0].name", message: /empty replaces entry/ },
  },
  { name: "text that is not YAML", source: "test/config/bad_yaml.yaml", configs: [file("bad_yaml.yaml", "'''\n")], refused: { file: "bad_yaml.yaml", path: "", message: /./ } },
  {
    name: "a misspelled rate_limit",
    source: "test/config/misspelled_key.yaml",
    configs: [file("misspelled_key.yaml", "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n    ratelimit:\n      unit: day\n      requests_per_unit: 5\n")],
    refused: { file: "misspelled_key.yaml", path: "descriptors[0].ratelimit", message: /unknown key "ratelimit"/ },
  },
  {
    name: "a misspelled requests_per_unit",
    source: "test/config/misspelled_key2.yaml",
    configs: [file("misspelled_key2.yaml", "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n    rate_limit:\n      unit: day\n      requestsperunit: 5\n")],
    refused: { file: "misspelled_key2.yaml", path: "descriptors[0].rate_limit.requestsperunit", message: /unknown key "requestsperunit"/ },
  },
  {
    name: "a key that is not a string",
    source: "test/config/non_string_key.yaml",
    configs: [file("non_string_key.yaml", "0.25: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n    rate_limit:\n      unit: day\n      requests_per_unit: 5\n")],
    refused: { file: "non_string_key.yaml", path: "", message: /key is not of type string/ },
  },
  {
    name: "a list of something other than mappings",
    source: "test/config/non_map_list.yaml",
    configs: [file("non_map_list.yaml", "domain: test-domain\ndescriptors:\n  - a\n  - b\n  - c\n")],
    refused: { file: "non_map_list.yaml", path: "descriptors[0]", message: /list of type other than map/ },
  },
  {
    name: "an unlimited rule with a unit",
    source: "test/config/unlimited_with_unit.yaml",
    configs: [file("unlimited_with_unit.yaml", "domain: test-domain\ndescriptors:\n  - key: foo\n    rate_limit:\n      unlimited: true\n      unit: day\n      requests_per_unit: 25\n")],
    refused: { file: "unlimited_with_unit.yaml", path: "descriptors[0].rate_limit.unit", message: /should not specify rate limit unit when unlimited/ },
  },
  {
    name: "share_threshold on a value without a wildcard",
    source: "src/config/config_impl.go (share_threshold can only be used with wildcard values)",
    configs: [file("share.yaml", "domain: d\ndescriptors:\n  - key: files\n    value: files/a\n    share_threshold: true\n    rate_limit:\n      unit: hour\n      requests_per_unit: 10\n")],
    refused: { file: "share.yaml", path: "descriptors[0].share_threshold", message: /wildcard/ },
  },
  {
    name: "a float where theirs wants an integer",
    source: "src/config/config_impl.go validateYamlKeys (error checking config)",
    configs: [file("float.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: hour\n      requests_per_unit: 1.5\n")],
    refused: { file: "float.yaml", path: "descriptors[0].rate_limit.requests_per_unit", message: /error checking config/ },
  },
];

function MESSAGING(): string {
  return `domain: messaging
descriptors:
  # Only allow 5 marketing messages a day
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5

  # Only allow 100 messages a day to any unique phone number
  - key: to_number
    rate_limit:
      unit: day
      requests_per_unit: 100
`;
}

function BASIC_CONFIG(): string {
  return `# Basic configuration for testing.
domain: test-domain
descriptors:
  - key: key1
    value: value1
    descriptors:
      - key: subkey1
        rate_limit:
          unit: second
          requests_per_unit: 5
      - key: subkey1
        value: subvalue1
        rate_limit:
          unit: second
          requests_per_unit: 10
  - key: key2
    rate_limit:
      unit: minute
      requests_per_unit: 20
  - key: key2
    value: value2
    rate_limit:
      unit: minute
      requests_per_unit: 30
  - key: key2
    value: value3
  - key: key3
    rate_limit:
      unit: hour
      requests_per_unit: 1
  - key: key4
    rate_limit:
      name: key4_rate_limit
      unit: day
      requests_per_unit: 1
  - key: key5
    value: value5
    rate_limit:
      unit: day
      requests_per_unit: 15
    descriptors:
      - key: subkey5
        value: subvalue5
        rate_limit:
          unit: day
          requests_per_unit: 25
  - key: key6
    rate_limit:
      unlimited: true
  - key: key7
    detailed_metric: true
    rate_limit:
      unit: minute
      requests_per_unit: 70
`;
}

function INTEGRATION_BASIC(): string {
  return `domain: basic
descriptors:
  - key: key1
    rate_limit:
      unit: second
      requests_per_unit: 50

  - key: one_per_minute
    rate_limit:
      unit: minute
      requests_per_unit: 1
`;
}

function INTEGRATION_ANOTHER(): string {
  return `domain: another
descriptors:
  - key: key2
    rate_limit:
      unit: minute
      requests_per_unit: 20

  - key: key3
    rate_limit:
      unit: hour
      requests_per_unit: 10
`;
}
