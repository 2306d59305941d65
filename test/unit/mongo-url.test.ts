import assert from 'node:assert/strict';
import { directConnectionFor } from '../../src/store/mongo.js';

describe('MongoDB connection topology from the URL', () => {
  it('connects directly to one host: a single mongod, mongos, FerretDB or mongo-java-server', () => {
    assert.equal(directConnectionFor('mongodb://127.0.0.1:27017/troupe'), true);
    assert.equal(directConnectionFor('mongodb://user:p%40ss@db.example:27017/troupe?authSource=admin'), true);
  });

  it('discovers the topology of a seed list (several mongos), a replica set or an SRV record', () => {
    assert.equal(directConnectionFor('mongodb://mongos-1:27017,mongos-2:27017/troupe'), false);
    assert.equal(directConnectionFor('mongodb://u:p@mongos-1,mongos-2/troupe?w=majority'), false);
    assert.equal(directConnectionFor('mongodb://mongo-1:27017/troupe?replicaSet=rs0'), false);
    assert.equal(directConnectionFor('mongodb+srv://cluster0.example.net/troupe'), false);
  });
});
