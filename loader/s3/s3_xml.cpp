// S3 XML through libxml2's tree API; element names are matched without their namespace (S3 uses one, RGW too).
#include "loader/s3/s3_xml.h"

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <cstring>
#include <memory>

namespace feedrate {
namespace {

struct DocFree {
  void operator()(xmlDoc* d) const { xmlFreeDoc(d); }
};
using Doc = std::unique_ptr<xmlDoc, DocFree>;

Doc Parse(std::string_view xml) {
  if (xml.empty() || xml.size() > (64u << 20)) return nullptr;
  return Doc(xmlReadMemory(xml.data(), static_cast<int>(xml.size()), "s3.xml", nullptr,
                           XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING));
}

bool Named(const xmlNode* n, const char* name) {
  return n->type == XML_ELEMENT_NODE && std::strcmp(reinterpret_cast<const char*>(n->name), name) == 0;
}

std::string Text(const xmlNode* n) {
  xmlChar* t = xmlNodeGetContent(n);
  std::string s = t == nullptr ? "" : reinterpret_cast<const char*>(t);
  xmlFree(t);
  return s;
}

const xmlNode* Child(const xmlNode* n, const char* name) {
  for (const xmlNode* c = n->children; c != nullptr; c = c->next) {
    if (Named(c, name)) return c;
  }
  return nullptr;
}

std::string ChildText(const xmlNode* n, const char* name) {
  const xmlNode* c = Child(n, name);
  return c == nullptr ? "" : Text(c);
}

}  // namespace

S3ErrorBody ParseS3Error(std::string_view xml) {
  S3ErrorBody e;
  Doc doc = Parse(xml);
  const xmlNode* root = doc ? xmlDocGetRootElement(doc.get()) : nullptr;
  if (root == nullptr || !Named(root, "Error")) return e;
  e.code = ChildText(root, "Code");
  e.message = ChildText(root, "Message");
  return e;
}

Result<S3ListPage> ParseListObjectsV2(std::string_view xml) {
  Doc doc = Parse(xml);
  const xmlNode* root = doc ? xmlDocGetRootElement(doc.get()) : nullptr;
  if (root == nullptr || !Named(root, "ListBucketResult")) {
    return Status::Corruption("ListObjectsV2: the response is not a ListBucketResult document");
  }
  S3ListPage page;
  for (const xmlNode* c = root->children; c != nullptr; c = c->next) {
    if (!Named(c, "Contents")) continue;
    S3ObjectEntry o;
    o.key = ChildText(c, "Key");
    const std::string size = ChildText(c, "Size");
    char* end = nullptr;
    o.size = std::strtoull(size.c_str(), &end, 10);
    if (o.key.empty() || size.empty() || *end != '\0') {
      return Status::Corruption("ListObjectsV2: an entry without a key or a numeric size ('" + o.key + "', '" + size + "')");
    }
    o.etag = ChildText(c, "ETag");
    page.objects.push_back(std::move(o));
  }
  page.truncated = ChildText(root, "IsTruncated") == "true";
  page.next_token = ChildText(root, "NextContinuationToken");
  if (page.truncated && page.next_token.empty()) {
    return Status::Corruption("ListObjectsV2: IsTruncated without a NextContinuationToken");
  }
  return page;
}

Result<std::string> ParseUploadId(std::string_view xml) {
  Doc doc = Parse(xml);
  const xmlNode* root = doc ? xmlDocGetRootElement(doc.get()) : nullptr;
  const std::string id = root != nullptr && Named(root, "InitiateMultipartUploadResult") ? ChildText(root, "UploadId") : "";
  if (id.empty()) return Status::Corruption("InitiateMultipartUpload: no UploadId in the response");
  return id;
}

std::string CompleteMultipartXml(const std::vector<std::string>& etags) {
  std::string x = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags.size(); ++i) {
    x += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>";
    for (char c : etags[i]) {  // ETags are quoted hex; escape anyway
      x += c == '"' ? std::string("&quot;") : c == '&' ? std::string("&amp;") : c == '<' ? std::string("&lt;") : std::string(1, c);
    }
    x += "</ETag></Part>";
  }
  return x + "</CompleteMultipartUpload>";
}

}  // namespace feedrate
