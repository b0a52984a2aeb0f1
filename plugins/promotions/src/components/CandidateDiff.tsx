import { Flex, Link, Text } from '@backstage/ui';
import {
  type Candidate,
  type CandidateImages,
  DigestText,
  type ImageInfo,
  registryImageUrl,
  shortSha,
  sourceLinks,
} from '@kpromo/plugin-promotions-react';

/**
 * A link out of the portal. Every href here comes from {@link sourceLinks} or
 * {@link registryImageUrl}, which only build http(s) URLs; the new tab gets no opener and no referrer.
 */
function OutLink({ href, children, label }: { href: string; children: string; label?: string }) {
  return (
    <Link href={href} target="_blank" rel="noopener noreferrer" variant="body-small" aria-label={label}>
      {children}
    </Link>
  );
}

/** Where an image is: `registry/repository`, linked on registries with a web page. */
function ImageWhere({ image }: { image: ImageInfo }) {
  const href = registryImageUrl(image.registry, image.repository, image.digest);
  const name = `${image.registry}/${image.repository}`;
  return href ? (
    <OutLink href={href} label={`image ${name} in its registry`}>
      {name}
    </OutLink>
  ) : (
    <Text variant="body-small" color="secondary">
      {name}
    </Text>
  );
}

/** What the new image was built from: commit, the changes since the running image, more about the image. */
function SourceOf({ images }: { images: CandidateImages }) {
  const { from: next, to: running } = images;
  if (next.labelsState === 'pending')
    return (
      <Text variant="body-small" color="secondary">
        reading the image labels…
      </Text>
    );
  if (next.labelsState === 'unavailable')
    return (
      <Text variant="body-small" color="secondary">
        image labels not readable from {next.registry}
      </Text>
    );
  const links = sourceLinks(next.labels, running?.labels);
  if (!links.repository && !links.imageInfo)
    return (
      <Text variant="body-small" color="secondary">
        no source labels on the image
      </Text>
    );
  return (
    <Flex gap="2" align="center" style={{ flexWrap: 'wrap' }}>
      {links.commit ? (
        <OutLink
          href={links.commit.url}
          label={`source commit ${shortSha(links.commit.revision)} of ${images.application}`}
        >
          {`commit ${shortSha(links.commit.revision)}`}
        </OutLink>
      ) : links.repository ? (
        <OutLink href={links.repository.url}>{links.repository.name}</OutLink>
      ) : null}
      {links.changes ? (
        <OutLink href={links.changes} label={`changes of ${images.application} since the running version`}>
          changes since running version
        </OutLink>
      ) : null}
      {links.imageInfo ? <OutLink href={links.imageInfo}>about the image</OutLink> : null}
    </Flex>
  );
}

/**
 * The real diff of a stage transition: per candidate, the running and the new version with short
 * copyable digests, where the images are, and, from their OCI labels, the source commit and the
 * changes between them.
 */
export function CandidateDiff({
  candidates,
  images = [],
  testId = 'candidate-diff',
}: {
  candidates: Candidate[];
  images?: CandidateImages[];
  testId?: string;
}) {
  return (
    <ul data-testid={testId} style={{ margin: 0, paddingLeft: 20, display: 'grid', gap: 6 }}>
      {candidates.map((c) => {
        const img = images.find((i) => i.application === c.application);
        return (
          <li key={c.application} data-testid={`candidate-${c.application}`}>
            <Flex direction="column" gap="1">
              <Text variant="body-small">
                <Text as="span" variant="body-small" weight="bold">
                  {c.application}
                </Text>
                : {c.to?.tag ?? 'not deployed'} → {c.from.tag}
              </Text>
              <Flex gap="2" align="center" style={{ flexWrap: 'wrap' }}>
                {c.to?.digest ? <DigestText digest={c.to.digest} /> : null}
                {c.to?.digest ? <Text variant="body-small">→</Text> : null}
                <DigestText digest={c.from.digest} />
                {img ? <ImageWhere image={img.from} /> : null}
              </Flex>
              {img ? <SourceOf images={img} /> : null}
            </Flex>
          </li>
        );
      })}
    </ul>
  );
}
