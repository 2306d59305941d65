import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { clientOptions } from '../../src/store/mongo.js';

/** The driver parses URL and options in the constructor, without connecting: what it would do is visible here. */
function parsed(url: string): MongoClient['options'] {
  return new MongoClient(url, clientOptions('test')).options;
}

describe('MongoDB connection topology from the URL', () => {
  it('discovers what one host is: a replica-set member leads to the whole set, so a failover is followed', () => {
    // A direct connection to one member of a replica set stays on it after it steps down: every write then fails.
    assert.equal(parsed('mongodb://mongo-0.mongo:27017/troupe').directConnection, false);
    assert.equal(parsed('mongodb://user:p%40ss@db.example:27017/troupe?authSource=admin').directConnection, false);
  });

  it('discovers a seed list (several mongos), a named replica set and an SRV record', () => {
    assert.equal(parsed('mongodb://mongos-1:27017,mongos-2:27017/troupe').directConnection, false);
    assert.equal(parsed('mongodb://u:p@mongos-1,mongos-2/troupe?w=majority').directConnection, false);
    assert.equal(parsed('mongodb://mongo-1:27017/troupe?replicaSet=rs0').directConnection, false);
    assert.equal(parsed('mongodb+srv://cluster0.example.net/troupe').directConnection, false);
  });

  it('reads from the primary whatever the URL says: every read must see the writes before it', () => {
    assert.equal(parsed('mongodb://a,b,c/troupe?replicaSet=rs0&readPreference=secondaryPreferred').readPreference.mode, 'primary');
  });

  it('asks for journaled writes (MongoDB acknowledges a w:1 write before its journal is on disk otherwise), keeping the URL w', () => {
    assert.equal(parsed('mongodb://mongo-0:27017/troupe').writeConcern?.journal, true);
    const majority = parsed('mongodb://a,b,c/troupe?replicaSet=rs0&w=majority').writeConcern;
    assert.equal(majority?.journal, true);
    assert.equal(majority?.w, 'majority');
  });

  it('leaves the URL in charge: directConnection=true is kept, loadBalanced=true is accepted', () => {
    assert.equal(parsed('mongodb://mongo-0:27017/troupe?directConnection=true').directConnection, true);
    // The driver refuses loadBalanced beside any directConnection option, so setting one would stop the process at start.
    assert.equal(parsed('mongodb://lb.example:27017/troupe?loadBalanced=true').loadBalanced, true);
  });
});
