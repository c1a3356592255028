// zlib (Debian's zlib1g-dev), for the decision log's HTTP sink: its batches are gzipped.
#include <zlib.h>
